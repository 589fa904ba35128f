package streams

import (
	"fmt"
	"math"
	"sort"
)

// Queryable is what holds local stores for interactive queries: an App or
// a TestDriver.
type Queryable interface {
	localStores(name string) (*storeSpec, []*storeInst, error)
}

// ReadOnlyKeyValueStore reads a key-value store across the local tasks
// (Kafka Streams' ReadOnlyKeyValueStore from
// KafkaStreams.store(StoreQueryParameters)). Reads may run concurrently
// with processing; each sees the store as of some point in it.
type ReadOnlyKeyValueStore[K, V any] struct {
	spec   *storeSpec
	stores []*storeInst
	ks     Serde[K]
	vs     Serde[V]
}

// QueryKeyValueStore opens the local instances of store name for reading.
// K and V must be the store's key and value types; the serdes decode its
// bytes.
func QueryKeyValueStore[K, V any](q Queryable, name string, keySerde Serde[K], valueSerde Serde[V]) (*ReadOnlyKeyValueStore[K, V], error) {
	spec, stores, err := q.localStores(name)
	if err != nil {
		return nil, err
	}
	if spec.kind != kindKeyValue && spec.kind != kindPlain {
		return nil, fmt.Errorf("streams: store %q is not a key-value store", name)
	}
	return &ReadOnlyKeyValueStore[K, V]{spec: spec, stores: stores, ks: keySerde, vs: valueSerde}, nil
}

func (r *ReadOnlyKeyValueStore[K, V]) decodeValue(b []byte) (V, error) {
	if r.spec.kind == kindKeyValue {
		_, b = splitTsValue(b)
	}
	return r.vs.Deserialize(r.spec.name, b)
}

// Get returns the value of key k if a local task holds it.
func (r *ReadOnlyKeyValueStore[K, V]) Get(k K) (V, bool, error) {
	var zero V
	kb, err := r.ks.Serialize(r.spec.name, k)
	if err != nil {
		return zero, false, err
	}
	for _, s := range r.stores {
		if b, ok := s.bs.get(kb); ok {
			v, err := r.decodeValue(b)
			return v, err == nil, err
		}
	}
	return zero, false, nil
}

// Range calls fn for keys whose serialized form lies in [from, to], in
// serialized order per task, until fn returns false.
func (r *ReadOnlyKeyValueStore[K, V]) Range(from, to K, fn func(K, V) bool) error {
	fb, err := r.ks.Serialize(r.spec.name, from)
	if err != nil {
		return err
	}
	tb, err := r.ks.Serialize(r.spec.name, to)
	if err != nil {
		return err
	}
	return r.scan(fb, append(tb, 0), fn)
}

// All calls fn for every local entry until fn returns false.
func (r *ReadOnlyKeyValueStore[K, V]) All(fn func(K, V) bool) error { return r.scan(nil, nil, fn) }

func (r *ReadOnlyKeyValueStore[K, V]) scan(from, to []byte, fn func(K, V) bool) error {
	var ferr error
	stop := false
	for _, s := range r.stores {
		s.bs.scan(from, to, func(kb, vb []byte) bool {
			k, err := r.ks.Deserialize(r.spec.name, kb)
			if err != nil {
				ferr = err
				return false
			}
			v, err := r.decodeValue(vb)
			if err != nil {
				ferr = err
				return false
			}
			stop = !fn(k, v)
			return !stop
		})
		if ferr != nil || stop {
			break
		}
	}
	return ferr
}

// ReadOnlyWindowStore reads a window or session store (Kafka Streams'
// ReadOnlyWindowStore / ReadOnlySessionStore).
type ReadOnlyWindowStore[K, V any] struct {
	spec   *storeSpec
	stores []*storeInst
	ks     Serde[K]
	vs     Serde[V]
}

// QueryWindowStore opens the local instances of window or session store
// name for reading.
func QueryWindowStore[K, V any](q Queryable, name string, keySerde Serde[K], valueSerde Serde[V]) (*ReadOnlyWindowStore[K, V], error) {
	spec, stores, err := q.localStores(name)
	if err != nil {
		return nil, err
	}
	if spec.kind != kindWindow && spec.kind != kindSession {
		return nil, fmt.Errorf("streams: store %q is not a window or session store", name)
	}
	return &ReadOnlyWindowStore[K, V]{spec: spec, stores: stores, ks: keySerde, vs: valueSerde}, nil
}

// Fetch calls fn for k's windows starting in [from, to] (for sessions:
// ending in [from, to]), in time order, until fn returns false.
func (r *ReadOnlyWindowStore[K, V]) Fetch(k K, from, to int64, fn func(Window, V) bool) error {
	kb, err := r.ks.Serialize(r.spec.name, k)
	if err != nil {
		return err
	}
	var ferr error
	for _, s := range r.stores {
		segmented{s}.fetch(kb, from, to, func(t1, t2 int64, vb []byte) bool {
			_, b := splitTsValue(vb)
			v, err := r.vs.Deserialize(r.spec.name, b)
			if err != nil {
				ferr = err
				return false
			}
			w := Window{Start: t1, End: t1 + r.spec.winSize}
			if r.spec.kind == kindSession {
				w = Window{Start: t2, End: t1}
			}
			return fn(w, v)
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// FetchAll calls fn for k's windows at any time.
func (r *ReadOnlyWindowStore[K, V]) FetchAll(k K, fn func(Window, V) bool) error {
	return r.Fetch(k, 0, math.MaxInt64/2, fn)
}

// KeyQueryMetadata says where a key of a store lives.
type KeyQueryMetadata struct {
	// ActiveHost is the application.server of the instance running the
	// key's task ("" if unknown: no assignment yet, or the instance has no
	// application.server).
	ActiveHost string
	// StandbyHosts are the application.server of the instances holding a
	// standby of the key's task (num.standby.replicas), sorted.
	StandbyHosts []string
	// Partition is the key's partition (Kafka's murmur2 of the serialized
	// key, as the default partitioner put it there).
	Partition int32
	// Task is the task holding the key.
	Task TaskID
}

// QueryMetadataForKey finds the instance holding key of store (Kafka
// Streams' KafkaStreams.queryMetadataForKey), from the assignment the
// group distributed last.
func QueryMetadataForKey[K any](a *App, store string, key K, keySerde Serde[K]) (KeyQueryMetadata, error) {
	sub := -1
	for _, st := range a.topo.subs {
		if contains(st.stores, store) {
			sub = st.id
		}
	}
	if sub < 0 {
		return KeyQueryMetadata{}, fmt.Errorf("streams: no task store %q", store)
	}
	n := a.subPartitions[sub]
	if n <= 0 {
		return KeyQueryMetadata{}, fmt.Errorf("streams: App not started")
	}
	kb, err := keySerde.Serialize(store, key)
	if err != nil {
		return KeyQueryMetadata{}, err
	}
	md := KeyQueryMetadata{Partition: keyPartition(kb, n)}
	md.Task = TaskID{Subtopology: sub, Partition: md.Partition}
	if info := a.info.Load(); info != nil {
		for host, tasks := range info.Hosts {
			if contains(tasks, md.Task.String()) {
				md.ActiveHost = host
			}
		}
		for host, tasks := range info.StandbyHosts {
			if contains(tasks, md.Task.String()) {
				md.StandbyHosts = append(md.StandbyHosts, host)
			}
		}
		sort.Strings(md.StandbyHosts)
	}
	return md, nil
}
