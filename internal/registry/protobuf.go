package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoRootFile is the file name the registered schema compiles as; its
// imports are the references' names.
const protoRootFile = "registered.proto"

// protobufSchema is a .proto file compiled by bufbuild/protocompile.
type protobufSchema struct {
	file  protoreflect.FileDescriptor
	ident string
}

func parseProtobuf(text string, deps []dependency, normalize bool) (*protobufSchema, error) {
	files, err := compileProto(text, deps)
	if err != nil {
		return nil, err
	}
	ident := strings.TrimSpace(text)
	if normalize {
		ident = normaliseProtoText(text)
	}
	return &protobufSchema{file: files[0], ident: ident}, nil
}

// compileProto compiles text (with its references as importable files and
// Google's well-known types) and returns the linked root file.
func compileProto(text string, deps []dependency) (linker.Files, error) {
	srcs := map[string]string{protoRootFile: text}
	for _, d := range deps {
		srcs[d.Name] = d.Schema
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(srcs),
		}),
	}
	files, err := c.Compile(context.Background(), protoRootFile)
	if err != nil {
		return nil, err
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("compiled %d files", len(files))
	}
	return files, nil
}

// normaliseProtoText collapses whitespace runs and drops comments, so
// registrations differing only in layout are one schema.
func normaliseProtoText(text string) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		if f := strings.Fields(l); len(f) > 0 {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	return strings.Join(lines, "\n")
}

// Descriptor is the compiled file.
func (p *protobufSchema) Descriptor() protoreflect.FileDescriptor { return p.file }

func (p *protobufSchema) identity() string { return p.ident }

func (p *protobufSchema) canRead(writer parsedSchema) []string {
	w, ok := writer.(*protobufSchema)
	if !ok {
		return []string{"schema type changed"}
	}
	c := protoChecker{}
	c.file(p.file, w.file)
	return c.msgs
}
