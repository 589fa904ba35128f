package streams

import (
	"github.com/twmb/franz-go/pkg/kgo"
)

// record is a record inside the topology: key and value boxed, nil meaning
// null. Table operators pass a change as the value.
type record struct {
	key, value any
	ts         int64
	headers    []kgo.RecordHeader
}

// change is the value a table operator forwards: the new and the previous
// value for the key (nil = absent), as Kafka Streams' Change<V>.
type change struct {
	newV, oldV any
}

// proc is one processor instance in a task.
type proc interface {
	init(c *pctx)
	process(r record)
}

// node is a vertex of the topology graph.
type node struct {
	name         string
	order        int
	parents      []*node
	children     []*node
	stores       []string
	globalStores []string // global stores read (not part of a task)
	newProc      func() proc

	// source nodes
	topics         []string
	internalSource bool // a repartition topic (prefixed with application.id)
	keySerde       anySerde
	valSerde       anySerde
	global         bool
	tsx            TimestampExtractor // nil: the configured default (record time for internal topics)

	// sink nodes
	sink *sinkSpec
}

// sinkSpec is where a sink node writes.
type sinkSpec struct {
	topic    string // fixed topic, or "" with extract
	extract  func(r record, rc RecordContext) string
	internal bool  // a repartition topic
	numParts int32 // for internal topics: partition count, 0 = from upstream
	// sizeFrom, for an internal topic read alongside these sources (a
	// foreign-key join's topics), takes its partition count from them
	// rather than from the sub-topology writing it.
	sizeFrom  []*node
	keySerde  anySerde
	valSerde  anySerde
	partition func(topic string, key, value any, n int32) (int32, bool)
}

func (s *sinkSpec) describeTopic() string {
	if s.extract != nil {
		return "<extracted>"
	}
	return s.topic
}

// storeKind is the layout a store's bytes follow.
type storeKind int

const (
	kindKeyValue storeKind = iota // key -> ts|value
	kindWindow                    // segmented: window start
	kindSession                   // segmented: session end
	kindPlain                     // processor API: user key -> user value
)

// storeSpec declares a state store of the topology.
type storeSpec struct {
	name      string
	kind      storeKind
	backend   StoreBackend
	logged    bool
	keySerde  anySerde
	valSerde  anySerde
	retention int64 // window/session stores: ms kept behind stream time
	segment   int64 // window/session stores: segment interval, ms
	windowed  bool  // keys are Windowed[K] in IQ
	winSize   int64 // window stores: window size (for IQ window end)
	global    bool
	// queryable says an interactive query may read it (DSL stores that were
	// named, and processor API stores).
	queryable bool
}
