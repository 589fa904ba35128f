package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// The ACL record types are Kafka's apiKeys 6 and 18.
const (
	AccessControlEntryRecordType       RecordType = 6
	RemoveAccessControlEntryRecordType RecordType = 18
)

// AccessControlEntryRecord adds one ACL binding (Kafka's metadata record of
// the same name, apiKey 6): a resource pattern (type, name, pattern type)
// and an access control entry (principal, host, operation, permission).
// The enum fields carry Kafka's wire values (kmsg.ACLResourceType,
// ACLResourcePatternType, ACLOperation, ACLPermissionType); the controller
// validates them before committing (internal/security/acl). ID names the
// binding so a RemoveAccessControlEntryRecord can delete it.
type AccessControlEntryRecord struct {
	ID             Uuid   `json:"id"`
	ResourceType   int8   `json:"resource_type"`
	ResourceName   string `json:"resource_name"`
	PatternType    int8   `json:"pattern_type"`
	Principal      string `json:"principal"`
	Host           string `json:"host"`
	Operation      int8   `json:"operation"`
	PermissionType int8   `json:"permission_type"`
}

// RemoveAccessControlEntryRecord deletes the ACL binding with ID (Kafka's
// apiKey 18).
type RemoveAccessControlEntryRecord struct {
	ID Uuid `json:"id"`
}

func (*AccessControlEntryRecord) Type() RecordType { return AccessControlEntryRecordType }
func (*AccessControlEntryRecord) isRecord()        {}

func (*RemoveAccessControlEntryRecord) Type() RecordType {
	return RemoveAccessControlEntryRecordType
}
func (*RemoveAccessControlEntryRecord) isRecord() {}

// SameBinding reports whether two entries bind the same pattern and entry,
// whatever their ids: CreateAcls of an existing binding adds nothing, as
// Kafka's StandardAuthorizer.
func (r *AccessControlEntryRecord) SameBinding(o *AccessControlEntryRecord) bool {
	c := *o
	c.ID = r.ID
	return *r == c
}

// ACLSet is the immutable set of ACL bindings of an image, by id. A change
// yields a new ACLSet (ACLs change rarely, so a batch copies the map once),
// which lets the authorizer recognise an unchanged set by its pointer and
// keep the index and decision cache it derived from it.
type ACLSet struct {
	byID map[Uuid]*AccessControlEntryRecord
}

// emptyACLs is the ACL set of an image without ACLs.
var emptyACLs = &ACLSet{}

// Len is the number of bindings.
func (s *ACLSet) Len() int { return len(s.byID) }

// Each calls fn for every binding, in unspecified order. The records are
// shared with other images: do not modify them.
func (s *ACLSet) Each(fn func(*AccessControlEntryRecord)) {
	for _, r := range s.byID {
		fn(r)
	}
}

// Sorted returns the bindings ordered by id: a deterministic order for
// snapshots and listings.
func (s *ACLSet) Sorted() []*AccessControlEntryRecord {
	ids := slices.SortedFunc(maps.Keys(s.byID), func(a, b Uuid) int { return slices.Compare(a[:], b[:]) })
	out := make([]*AccessControlEntryRecord, len(ids))
	for i, id := range ids {
		out[i] = s.byID[id]
	}
	return out
}

// ACLs returns the image's ACL bindings (never nil).
func (img *Image) ACLs() *ACLSet {
	if img.acls == nil {
		return emptyACLs
	}
	return img.acls
}

// aclBuilder copies the base image's set on the first ACL record of a
// batch.
type aclBuilder struct {
	set    *ACLSet
	copied bool
}

func (b *aclBuilder) own() map[Uuid]*AccessControlEntryRecord {
	if !b.copied {
		old := b.set
		if old == nil {
			old = emptyACLs
		}
		b.set = &ACLSet{byID: maps.Clone(old.byID)}
		if b.set.byID == nil {
			b.set.byID = map[Uuid]*AccessControlEntryRecord{}
		}
		b.copied = true
	}
	return b.set.byID
}

func (b *aclBuilder) add(r *AccessControlEntryRecord) error {
	if r.ID.IsReserved() {
		return fmt.Errorf("ACL has reserved id %v", r.ID)
	}
	if b.set != nil {
		if _, ok := b.set.byID[r.ID]; ok {
			return fmt.Errorf("ACL id %v already exists", r.ID)
		}
	}
	c := *r
	b.own()[r.ID] = &c
	return nil
}

func (b *aclBuilder) remove(r *RemoveAccessControlEntryRecord) error {
	if b.set == nil || b.set.byID[r.ID] == nil {
		return fmt.Errorf("unknown ACL id %v", r.ID)
	}
	delete(b.own(), r.ID)
	return nil
}

// appendACLRecords appends the records that rebuild the set, for snapshots.
func appendACLRecords(recs []Record, s *ACLSet) []Record {
	if s == nil {
		return recs
	}
	for _, r := range s.Sorted() {
		c := *r
		recs = append(recs, &c)
	}
	return recs
}
