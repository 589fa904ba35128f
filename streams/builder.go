package streams

import (
	"errors"
	"fmt"
	"sort"
)

// Builder assembles a topology from the DSL, like Kafka Streams'
// StreamsBuilder. Create it with NewBuilder, declare sources with
// NewStream, NewTable and NewGlobalTable, chain operators, then call Build.
//
// Operators that keep the record types are methods (s.Filter(...));
// operators that produce new key or value types are package functions
// taking the input first (streams.MapValues(s, ...)), because Go methods
// cannot have their own type parameters.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	index  int
	nodes  []*node
	stores map[string]*storeSpec
	errs   []error
	built  bool
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{stores: make(map[string]*storeSpec)}
}

// newName is Kafka Streams' generated processor name: the prefix and a
// ten-digit, builder-wide index (KSTREAM-FILTER-0000000001).
func (b *Builder) newName(prefix string) string {
	n := fmt.Sprintf("%s%010d", prefix, b.index)
	b.index++
	return n
}

// newStoreName is Kafka Streams' generated store name
// (KSTREAM-AGGREGATE-STATE-STORE-0000000001).
func (b *Builder) newStoreName(prefix string) string {
	return b.newName(prefix + "STATE-STORE-")
}

func (b *Builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("streams: "+format, args...))
}

// addNode registers n under its (option-given or generated) name and links
// it below parents.
func (b *Builder) addNode(n *node, parents ...*node) *node {
	for _, o := range b.nodes {
		if o.name == n.name {
			b.fail("processor name %q used twice", n.name)
		}
	}
	n.order = len(b.nodes)
	b.nodes = append(b.nodes, n)
	for _, p := range parents {
		p.children = append(p.children, n)
		n.parents = append(n.parents, p)
	}
	return n
}

func (b *Builder) addStore(s *storeSpec) {
	if _, dup := b.stores[s.name]; dup {
		b.fail("store name %q used twice", s.name)
		return
	}
	b.stores[s.name] = s
}

// Build checks the graph and returns the Topology. The Builder cannot be
// used afterwards.
func (b *Builder) Build() (*Topology, error) {
	if b.built {
		return nil, errors.New("streams: Build called twice")
	}
	b.built = true
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	t := &Topology{nodes: b.nodes, stores: b.stores, byName: map[string]*node{}}
	for _, n := range b.nodes {
		t.byName[n.name] = n
	}
	if err := t.assignSubtopologies(); err != nil {
		return nil, err
	}
	return t, nil
}

// Topology is a built processor graph: source, processor and sink nodes,
// their state stores, split into sub-topologies at repartition topics. It
// is immutable and may run in any number of App instances or test drivers.
type Topology struct {
	nodes  []*node
	byName map[string]*node
	stores map[string]*storeSpec
	subs   []*subtopology
	global *subtopology // global tables' sources and stores, nil if none
}

// subtopology is a connected part of the graph; it runs as one task per
// input partition.
type subtopology struct {
	id      int
	nodes   []*node
	sources map[string]*node // topic (unprefixed for internal) -> source
	stores  []string
	// repartition topics this sub-topology writes and reads.
	sinksInternal []string
}

// assignSubtopologies groups nodes connected by edges or a shared store.
func (t *Topology) assignSubtopologies() error {
	parent := make(map[*node]*node)
	var find func(n *node) *node
	find = func(n *node) *node {
		if p, ok := parent[n]; ok && p != n {
			r := find(p)
			parent[n] = r
			return r
		}
		parent[n] = n
		return n
	}
	union := func(a, b *node) {
		ra, rb := find(a), find(b)
		if ra != rb {
			if ra.order < rb.order {
				parent[rb] = ra
			} else {
				parent[ra] = rb
			}
		}
	}
	byStore := map[string]*node{}
	for _, n := range t.nodes {
		find(n)
		for _, c := range n.children {
			union(n, c)
		}
		for _, s := range n.stores {
			if o, ok := byStore[s]; ok {
				union(n, o)
			} else {
				byStore[s] = n
			}
		}
	}
	groups := map[*node][]*node{}
	var roots []*node
	for _, n := range t.nodes {
		r := find(n)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], n)
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].order < roots[j].order })
	for _, r := range roots {
		st := &subtopology{sources: map[string]*node{}}
		isGlobal := false
		for _, n := range groups[r] {
			st.nodes = append(st.nodes, n)
			if n.global {
				isGlobal = true
			}
			for _, tp := range n.topics {
				if o, dup := st.sources[tp]; dup && o != n {
					return fmt.Errorf("streams: topic %q read by two sources (%s, %s)", tp, o.name, n.name)
				}
				st.sources[tp] = n
			}
			for _, s := range n.stores {
				if !contains(st.stores, s) {
					st.stores = append(st.stores, s)
				}
			}
			if n.sink != nil && n.sink.internal {
				st.sinksInternal = append(st.sinksInternal, n.sink.topic)
			}
		}
		if isGlobal {
			if t.global == nil {
				t.global = &subtopology{id: -1, sources: map[string]*node{}}
			}
			t.global.nodes = append(t.global.nodes, st.nodes...)
			for k, v := range st.sources {
				t.global.sources[k] = v
			}
			t.global.stores = append(t.global.stores, st.stores...)
			continue
		}
		st.id = len(t.subs)
		t.subs = append(t.subs, st)
	}
	seen := map[string]int{}
	for _, st := range t.subs {
		for tp := range st.sources {
			if o, ok := seen[tp]; ok {
				return fmt.Errorf("streams: topic %q is a source of sub-topologies %d and %d", tp, o, st.id)
			}
			seen[tp] = st.id
		}
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Describe renders the topology as Kafka Streams' TopologyDescription does:
// sub-topologies, their sources, processors with stores, and sinks.
func (t *Topology) Describe() string {
	var out []byte
	out = append(out, "Topologies:\n"...)
	describe := func(title string, st *subtopology) {
		out = append(out, fmt.Sprintf("   %s\n", title)...)
		for _, n := range st.nodes {
			switch {
			case n.topics != nil:
				out = append(out, fmt.Sprintf("    Source: %s (topics: %v)\n", n.name, n.topics)...)
			case n.sink != nil:
				out = append(out, fmt.Sprintf("    Sink: %s (topic: %s)\n", n.name, n.sink.describeTopic())...)
			default:
				out = append(out, fmt.Sprintf("    Processor: %s (stores: %v)\n", n.name, n.stores)...)
			}
			var kids []string
			for _, c := range n.children {
				kids = append(kids, c.name)
			}
			if len(kids) > 0 {
				out = append(out, fmt.Sprintf("      --> %v\n", kids)...)
			}
		}
	}
	for _, st := range t.subs {
		describe(fmt.Sprintf("Sub-topology: %d", st.id), st)
	}
	if t.global != nil {
		describe("Sub-topology: global", t.global)
	}
	return string(out)
}

// SourceTopics lists the user topics the topology reads (not internal
// repartition topics), sorted.
func (t *Topology) SourceTopics() []string {
	var out []string
	for _, n := range t.nodes {
		if !n.internalSource {
			out = append(out, n.topics...)
		}
	}
	sort.Strings(out)
	return out
}

// StoreNames lists the topology's state stores, sorted.
func (t *Topology) StoreNames() []string {
	var out []string
	for n := range t.stores {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
