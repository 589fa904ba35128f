package registry

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoChecker applies Confluent's Protobuf compatibility rules between a
// reader's and a writer's file: what the wire format cannot carry across is
// refused (a message removed, a field number given another kind, a
// required field added or removed, a field moved into a oneof, the package
// changed); fields added or removed, renames and new messages are allowed,
// as protobuf readers skip unknown fields.
type protoChecker struct{ msgs []string }

func (c *protoChecker) fail(kind, path string) {
	c.msgs = append(c.msgs, fmt.Sprintf("{errorType:'%s', location:'%s'}", kind, path))
}

func (c *protoChecker) file(r, w protoreflect.FileDescriptor) {
	if r.Package() != w.Package() {
		c.fail("PACKAGE_CHANGED", "#/")
	}
	c.messages(r.Messages(), w.Messages(), "#/")
}

func (c *protoChecker) messages(r, w protoreflect.MessageDescriptors, path string) {
	for i := range w.Len() {
		wm := w.Get(i)
		rm := r.ByName(wm.Name())
		p := path + string(wm.Name())
		if rm == nil {
			c.fail("MESSAGE_REMOVED", p)
			continue
		}
		c.message(rm, wm, p)
	}
}

// protoKindGroup puts the kinds a field can change between into one group:
// the protobuf language guide's compatible changes (int32, uint32, int64,
// uint64 and bool; sint32 and sint64; fixed32 and sfixed32; fixed64 and
// sfixed64; string and bytes).
func protoKindGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "length-delimited"
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "message"
	case protoreflect.EnumKind:
		return "enum"
	}
	return k.String()
}

func (c *protoChecker) message(r, w protoreflect.MessageDescriptor, path string) {
	rf, wf := r.Fields(), w.Fields()
	for i := range wf.Len() {
		f := wf.Get(i)
		p := fmt.Sprintf("%s.%d", path, f.Number())
		g := rf.ByNumber(f.Number())
		if g == nil {
			if f.Cardinality() == protoreflect.Required {
				c.fail("REQUIRED_FIELD_REMOVED", p)
			}
			continue
		}
		c.field(g, f, p)
	}
	for i := range rf.Len() {
		g := rf.Get(i)
		if wf.ByNumber(g.Number()) == nil && g.Cardinality() == protoreflect.Required {
			c.fail("REQUIRED_FIELD_ADDED", fmt.Sprintf("%s.%d", path, g.Number()))
		}
	}
	c.oneofs(r, w, path)
	c.messages(r.Messages(), w.Messages(), path+".")
}

func (c *protoChecker) field(g, f protoreflect.FieldDescriptor, p string) {
	if g.IsMap() != f.IsMap() || (g.Cardinality() == protoreflect.Repeated) != (f.Cardinality() == protoreflect.Repeated) {
		c.fail("FIELD_KIND_CHANGED", p)
		return
	}
	if g.IsMap() {
		c.field(g.MapKey(), f.MapKey(), p+".key")
		c.field(g.MapValue(), f.MapValue(), p+".value")
		return
	}
	gk, fk := g.Kind(), f.Kind()
	if protoKindGroup(gk) != protoKindGroup(fk) {
		c.fail("FIELD_KIND_CHANGED", p)
		return
	}
	switch gk {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if g.Message().FullName() != f.Message().FullName() {
			c.fail("FIELD_NAMED_TYPE_CHANGED", p)
		}
	case protoreflect.EnumKind:
		if g.Enum().FullName() != f.Enum().FullName() {
			c.fail("FIELD_NAMED_TYPE_CHANGED", p)
		}
	}
}

// oneofs: a field moved into a oneof that already existed, or several
// fields moved into a new one, change what a reader keeps.
func (c *protoChecker) oneofs(r, w protoreflect.MessageDescriptor, path string) {
	for i := range r.Oneofs().Len() {
		o := r.Oneofs().Get(i)
		if o.IsSynthetic() {
			continue
		}
		existed := false
		var moved int
		for j := range o.Fields().Len() {
			f := w.Fields().ByNumber(o.Fields().Get(j).Number())
			if f == nil {
				continue
			}
			if f.ContainingOneof() != nil && !f.ContainingOneof().IsSynthetic() {
				existed = true
			} else {
				moved++
			}
		}
		if existed && moved > 0 {
			c.fail("FIELD_MOVED_TO_EXISTING_ONEOF", path+"."+string(o.Name()))
		} else if !existed && moved > 1 {
			c.fail("MULTIPLE_FIELDS_MOVED_TO_ONEOF", path+"."+string(o.Name()))
		}
	}
}
