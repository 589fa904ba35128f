package herder

import (
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The Connect group protocol (Kafka's ConnectProtocol and
// IncrementalCooperativeConnectProtocol): protocol type "connect", protocol
// names by connect.protocol, member metadata and assignments in Kafka's
// schemas.
const (
	protocolType = "connect"
	// connectorTask is the task id that stands for the connector itself in
	// an assignment's task list.
	connectorTask = -1
)

// protocolNames are the protocols offered, most preferred first.
func protocolNames(p string) []string {
	switch p {
	case "eager":
		return []string{"default"}
	case "compatible":
		return []string{"compatible", "default"}
	}
	return []string{"sessioned", "compatible", "default"}
}

// protocolVersion is the metadata version of a protocol name.
func protocolVersion(name string) int16 {
	switch name {
	case "compatible":
		return 1
	case "sessioned":
		return 2
	}
	return 0
}

// Assignment error codes.
const (
	assignNoError        int16 = 0
	assignConfigMismatch int16 = 1
)

// allocation is a set of connectors and tasks: connector name → task ids
// (connectorTask for the connector itself).
type allocation map[string][]int32

func (a allocation) add(conn string, task int32) {
	a[conn] = append(a[conn], task)
}

func (a allocation) size() int {
	n := 0
	for _, ts := range a {
		n += len(ts)
	}
	return n
}

func (a allocation) has(conn string, task int32) bool {
	for _, t := range a[conn] {
		if t == task {
			return true
		}
	}
	return false
}

func appendAllocation(dst []byte, a allocation, nullable bool) []byte {
	if a == nil && nullable {
		return kbin.AppendNullableArrayLen(dst, 0, true)
	}
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	sort.Strings(names)
	dst = kbin.AppendArrayLen(dst, len(names))
	for _, n := range names {
		dst = kbin.AppendString(dst, n)
		ts := append([]int32(nil), a[n]...)
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		dst = kbin.AppendArrayLen(dst, len(ts))
		for _, t := range ts {
			dst = kbin.AppendInt32(dst, t)
		}
	}
	return dst
}

func readAllocation(r *kbin.Reader) allocation {
	n := r.ArrayLen()
	if n < 0 {
		return nil
	}
	a := allocation{}
	for i := int32(0); i < n && r.Ok(); i++ {
		name := r.String()
		m := r.ArrayLen()
		for j := int32(0); j < m && r.Ok(); j++ {
			a.add(name, r.Int32())
		}
	}
	return a
}

// memberMeta is a member's JoinGroup metadata: its REST URL, the config
// topic offset it has read, and (incremental protocols) what it runs.
type memberMeta struct {
	version      int16
	url          string
	configOffset int64
	allocation   allocation // v1+: the previous assignment, nil if none
}

func (m memberMeta) encode() []byte {
	b := kbin.AppendInt16(nil, m.version)
	b = kbin.AppendString(b, m.url)
	b = kbin.AppendInt64(b, m.configOffset)
	if m.version >= 1 {
		var alloc []byte
		if m.allocation != nil {
			alloc = kbin.AppendInt16(nil, m.version)
			alloc = appendAllocation(alloc, m.allocation, false)
		}
		b = kbin.AppendNullableBytes(b, alloc)
	}
	return b
}

func decodeMemberMeta(b []byte) (memberMeta, error) {
	r := kbin.Reader{Src: b}
	m := memberMeta{version: r.Int16(), url: r.String(), configOffset: r.Int64()}
	if m.version >= 1 {
		if alloc := r.NullableBytes(); alloc != nil {
			ar := kbin.Reader{Src: alloc}
			ar.Int16()
			m.allocation = readAllocation(&ar)
			if !ar.Ok() {
				return m, errors.New("malformed connect member allocation")
			}
		}
	}
	if !r.Ok() {
		return m, errors.New("malformed connect member metadata")
	}
	return m, nil
}

// assignment is a member's SyncGroup assignment.
type assignment struct {
	version      int16
	err          int16
	leader       string
	leaderURL    string
	configOffset int64
	assigned     allocation
	revoked      allocation // v1+
	delay        int32      // v1+: ms until the leader reassigns lost work
}

func (a assignment) encode() []byte {
	b := kbin.AppendInt16(nil, a.version)
	b = kbin.AppendInt16(b, a.err)
	b = kbin.AppendString(b, a.leader)
	b = kbin.AppendString(b, a.leaderURL)
	b = kbin.AppendInt64(b, a.configOffset)
	b = appendAllocation(b, a.assigned, a.version >= 1)
	if a.version >= 1 {
		b = appendAllocation(b, a.revoked, true)
		b = kbin.AppendInt32(b, a.delay)
	}
	return b
}

func decodeAssignment(b []byte) (assignment, error) {
	r := kbin.Reader{Src: b}
	a := assignment{version: r.Int16(), err: r.Int16(), leader: r.String(), leaderURL: r.String(), configOffset: r.Int64()}
	a.assigned = readAllocation(&r)
	if a.version >= 1 {
		a.revoked = readAllocation(&r)
		a.delay = r.Int32()
	}
	if !r.Ok() {
		return a, errors.New("malformed connect assignment")
	}
	if a.assigned == nil {
		a.assigned = allocation{}
	}
	return a, nil
}
