package streams

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// ForeignKeyJoin is the inner foreign-key table-table join (KIP-213,
// Kafka Streams' KTable.join(KTable other, Function foreignKeyExtractor,
// ValueJoiner)): each row (k, v) of l joins the row of r whose key is
// foreignKey(v), giving joiner(v, rv) under k. The result changes when
// the left row changes (its value, or which right row it points at) and
// when the right row it points at changes or is deleted. The tables need
// not be co-partitioned: the join runs through two internal topics,
// <application.id>-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic
// (keyed by the foreign key, as many partitions as r's topics) and
// <application.id>-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-<n>-topic (keyed by
// l's key, as many partitions as l's), and a subscription store on r's
// side (<application.id>-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-<n>-changelog).
// A response computed for a left value that has since changed is dropped
// (the left value's hash travels with the subscription), so the result
// always ends at the join of the latest rows. The result is materialized,
// in the Materialized store if given. Options: Named, Materialized,
// WithBackend, WithLoggingDisabled.
func ForeignKeyJoin[K, V, KO, VO, VR any](l Table[K, V], r Table[KO, VO], foreignKey func(V) KO, joiner func(V, VO) VR, options ...Option) Table[K, VR] {
	return fkJoin[K, V, KO, VO, VR](l, r, foreignKey, false, func(v, ov any) any { return joiner(as[V](v), as[VO](ov)) }, options)
}

// ForeignKeyLeftJoin is the left foreign-key table-table join (Kafka
// Streams' KTable.leftJoin(KTable, Function, ValueJoiner)): a left row
// whose foreign key has no right row gives joiner(v, nil). Options as
// ForeignKeyJoin.
func ForeignKeyLeftJoin[K, V, KO, VO, VR any](l Table[K, V], r Table[KO, VO], foreignKey func(V) KO, joiner func(V, *VO) VR, options ...Option) Table[K, VR] {
	return fkJoin[K, V, KO, VO, VR](l, r, foreignKey, true, func(v, ov any) any { return joiner(as[V](v), ptrOf[VO](ov)) }, options)
}

// Subscription instructions, as Kafka Streams' SubscriptionWrapper.
const (
	fkDeleteNoPropagate  byte = 0 // the left row moved to another key: forget it here
	fkDeleteAndPropagate byte = 1 // the left row was deleted: forget it, answer null
	fkPropagateNull      byte = 2 // answer with the right value, null if none
	fkPropagateIfFound   byte = 3 // answer only if there is a right value
)

// fkSubscription is a subscription-registration record's value: the left
// row's key and partition, and the hash of its value (nil for a delete).
type fkSubscription struct {
	instruction byte
	hash        []byte // 16 bytes, or nil
	partition   int32  // the left task's partition, where the answer goes
	pk          []byte // the left key, serialized
}

// fkResponse is a subscription-response record's value: the right value
// (serialized, nil when absent) for the left value with that hash.
type fkResponse struct {
	hash      []byte
	value     []byte
	partition int32 // not serialized: the partition the record goes to
}

// Wire layouts (internal topics of this library):
//
//	subscription: version 0 | instruction | hash flag (0/1) | [hash 16] | partition (4) | primary key
//	response:     version 0 | hash flag | [hash 16] | value flag | [value]
//	store value:  hash flag | [hash 16] | partition (4)
func appendHash(out, h []byte) []byte {
	if h == nil {
		return append(out, 0)
	}
	return append(append(out, 1), h...)
}

func cutHash(b []byte) (h, rest []byte, err error) {
	if len(b) < 1 {
		return nil, nil, errShortFK
	}
	if b[0] == 0 {
		return nil, b[1:], nil
	}
	if len(b) < 17 {
		return nil, nil, errShortFK
	}
	return bytes.Clone(b[1:17]), b[17:], nil
}

var errShortFK = errors.New("streams: foreign-key join record too short")

func (s fkSubscription) encode() []byte {
	out := appendHash([]byte{0, s.instruction}, s.hash)
	out = binary.BigEndian.AppendUint32(out, uint32(s.partition))
	return append(out, s.pk...)
}

func decodeSubscription(b []byte) (fkSubscription, error) {
	if len(b) < 2 || b[0] != 0 {
		return fkSubscription{}, fmt.Errorf("streams: foreign-key subscription: unknown version or short record")
	}
	s := fkSubscription{instruction: b[1]}
	if s.instruction > fkPropagateIfFound {
		return s, fmt.Errorf("streams: foreign-key subscription: unknown instruction %d", s.instruction)
	}
	h, rest, err := cutHash(b[2:])
	if err != nil || len(rest) < 4 {
		return s, errShortFK
	}
	s.hash, s.partition, s.pk = h, int32(binary.BigEndian.Uint32(rest)), bytes.Clone(rest[4:])
	return s, nil
}

func (r fkResponse) encode() []byte {
	out := appendHash([]byte{0}, r.hash)
	if r.value == nil {
		return append(out, 0)
	}
	return append(append(out, 1), r.value...)
}

func decodeResponse(b []byte) (fkResponse, error) {
	if len(b) < 1 || b[0] != 0 {
		return fkResponse{}, fmt.Errorf("streams: foreign-key response: unknown version or short record")
	}
	h, rest, err := cutHash(b[1:])
	if err != nil || len(rest) < 1 {
		return fkResponse{}, errShortFK
	}
	r := fkResponse{hash: h}
	if rest[0] == 1 {
		r.value = bytes.Clone(rest[1:])
	}
	return r, nil
}

func subscriptionSerde() anySerde {
	return anySerde{
		ser: func(_ string, v any) ([]byte, error) { return v.(fkSubscription).encode(), nil },
		de:  func(_ string, b []byte) (any, error) { return decodeSubscription(b) },
	}
}

func responseSerde() anySerde {
	return anySerde{
		ser: func(_ string, v any) ([]byte, error) { return v.(fkResponse).encode(), nil },
		de:  func(_ string, b []byte) (any, error) { return decodeResponse(b) },
	}
}

// subscriptionKey is the subscription store's key: the foreign key's
// length and bytes, then the primary key, so one prefix scan finds every
// left row pointing at a right key.
func subscriptionKey(fk, pk []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(fk)+len(pk)), uint32(len(fk)))
	return append(append(out, fk...), pk...)
}

func subscriptionPrefix(fk []byte) []byte { return subscriptionKey(fk, nil) }

// valueHash is the 128-bit FNV-1a hash of a serialized left value.
func valueHash(b []byte) []byte {
	h := fnv.New128a()
	h.Write(b)
	return h.Sum(nil)
}

// upstreamSources are the source nodes n reads from, through its parents.
func upstreamSources(n *node) []*node {
	var out []*node
	seen := map[*node]bool{}
	var walk func(*node)
	walk = func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.topics != nil {
			out = append(out, n)
		}
		for _, p := range n.parents {
			walk(p)
		}
	}
	walk(n)
	return out
}

func fkJoin[K, V, KO, VO, VR any](l Table[K, V], r Table[KO, VO], foreignKey func(V) KO, left bool, joiner func(v, ov any) any, options []Option) Table[K, VR] {
	b := l.b
	op := "ForeignKeyJoin"
	if left {
		op = "ForeignKeyLeftJoin"
	}
	o := b.collect(op, options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	if l.win != nil || r.win != nil {
		b.fail("%s: windowed tables cannot be joined by foreign key", op)
	}
	l, r = l.ensureStore(), r.ensureStore()
	base := o.name
	if base == "" {
		base = b.newName("KTABLE-FK-JOIN-")
	}
	regTopic := b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-") + "-topic"
	respTopic := b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-") + "-topic"
	subStore := b.newStoreName("KTABLE-FK-JOIN-SUBSCRIPTION-")
	lks, rks := eraseSerde(l.ks), eraseSerde(r.ks)
	lvs, rvs := eraseSerde(l.vs), eraseSerde(r.vs)
	ser := func(s anySerde, topic string, v any) []byte {
		out, err := s.ser(topic, v)
		if err != nil {
			panic(processingError{fmt.Errorf("streams: %s: serializing: %w", op, err)})
		}
		return out
	}
	hashOf := func(v any) []byte {
		if v == nil {
			return nil
		}
		return valueHash(ser(lvs, regTopic, v))
	}

	// Left side: each change of a left row subscribes it to the right key
	// its value points at (and unsubscribes it from the one it left).
	send := b.stateless(base+"-SUBSCRIPTION-SEND", l.n, func(c *pctx, rec record) {
		ch := rec.value.(change)
		pk := ser(lks, regTopic, rec.key)
		part := c.t.id.Partition
		emit := func(fk any, instr byte, hash []byte) {
			c.forward(record{key: fk, value: fkSubscription{instruction: instr, hash: hash, partition: part, pk: pk}, ts: rec.ts, headers: rec.headers})
		}
		var oldFK any
		if ch.oldV != nil {
			oldFK = foreignKey(ch.oldV.(V))
		}
		if ch.newV == nil {
			if oldFK != nil {
				emit(oldFK, fkDeleteAndPropagate, nil)
			}
			return
		}
		newFK := foreignKey(ch.newV.(V))
		hash := hashOf(ch.newV)
		if oldFK != nil && !bytes.Equal(ser(rks, regTopic, oldFK), ser(rks, regTopic, newFK)) {
			emit(oldFK, fkDeleteNoPropagate, hash)
			// A null answer must reach the left side even for an inner
			// join, to retract the result joined with the old key.
			emit(newFK, fkPropagateNull, hash)
			return
		}
		instr := fkPropagateIfFound
		if left {
			instr = fkPropagateNull
		}
		emit(newFK, instr, hash)
	})
	b.addNode(&node{name: regTopic + "-sink", sink: &sinkSpec{
		topic: regTopic, internal: true, keySerde: rks, valSerde: subscriptionSerde(),
		sizeFrom: upstreamSources(r.n),
	}}, send)

	// Right side: the subscription store, answered from r's store on a
	// subscription and for every subscriber on a change of a right row.
	b.addStore(&storeSpec{name: subStore, kind: kindPlain, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(Bytes()), valSerde: eraseSerde(Bytes())})
	rightStores := []string{subStore, r.store}
	regSrc := b.addNode(&node{name: regTopic + "-source", topics: []string{regTopic}, internalSource: true,
		keySerde: rks, valSerde: subscriptionSerde()})
	answer := b.addNode(&node{name: b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"), stores: rightStores, newProc: func() proc {
		return &funcProc{f: func(c *pctx, rec record) {
			sub := rec.value.(fkSubscription)
			st := c.store(subStore)
			fk := ser(rks, regTopic, rec.key)
			key := subscriptionKey(fk, sub.pk)
			reply := func(v []byte) {
				c.forward(record{key: sub.pk, value: fkResponse{hash: sub.hash, value: v, partition: sub.partition}, ts: rec.ts, headers: rec.headers})
			}
			switch sub.instruction {
			case fkDeleteNoPropagate:
				st.put(key, nil)
			case fkDeleteAndPropagate:
				st.put(key, nil)
				reply(nil)
			default:
				sv := binary.BigEndian.AppendUint32(appendHash(nil, sub.hash), uint32(sub.partition))
				st.put(key, sv)
				rv, _, ok := kvView{c.store(r.store)}.get(rec.key)
				switch {
				case ok:
					reply(ser(rvs, respTopic, rv))
				case sub.instruction == fkPropagateNull:
					reply(nil)
				}
			}
		}}
	}}, regSrc)
	rightChange := b.addNode(&node{name: b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-FOREIGN-"), stores: rightStores, newProc: func() proc {
		return &funcProc{f: func(c *pctx, rec record) {
			ch := rec.value.(change)
			var v []byte
			if ch.newV != nil {
				v = ser(rvs, respTopic, ch.newV)
			}
			fk := ser(rks, regTopic, rec.key)
			prefix := subscriptionPrefix(fk)
			type sub struct {
				pk, hash []byte
				part     int32
			}
			var subs []sub
			c.store(subStore).bs.scan(prefix, prefixEnd(prefix), func(k, sv []byte) bool {
				h, rest, err := cutHash(sv)
				if err != nil || len(rest) != 4 {
					panic(storeError{fmt.Errorf("foreign-key subscription store: bad value %x", sv)})
				}
				subs = append(subs, sub{pk: bytes.Clone(k[len(prefix):]), hash: h, part: int32(binary.BigEndian.Uint32(rest))})
				return true
			})
			for _, s := range subs {
				c.forward(record{key: s.pk, value: fkResponse{hash: s.hash, value: v, partition: s.part}, ts: rec.ts, headers: rec.headers})
			}
		}}
	}}, r.n)
	raw := eraseSerde(Bytes())
	b.addNode(&node{name: respTopic + "-sink", sink: &sinkSpec{
		topic: respTopic, internal: true, keySerde: raw, valSerde: responseSerde(),
		sizeFrom: upstreamSources(l.n),
		partition: func(topic string, _, v any, n int32) (int32, bool) {
			p := v.(fkResponse).partition
			if p < 0 || p >= n {
				panic(processingError{fmt.Errorf("streams: %s: the left row's partition %d is not one of %q's %d", op, p, topic, n)})
			}
			return p, true
		},
	}}, answer, rightChange)

	// Left side again: resolve each answer against the left row's current
	// value, dropping answers for a value that has changed since.
	respSrc := b.addNode(&node{name: respTopic + "-source", topics: []string{respTopic}, internalSource: true,
		keySerde: raw, valSerde: responseSerde()})
	resolver := b.addNode(&node{name: b.newName("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"), stores: []string{l.store}, newProc: func() proc {
		return &funcProc{f: func(c *pctx, rec record) {
			resp := rec.value.(fkResponse)
			pk, err := lks.de(respTopic, rec.key.([]byte))
			if err != nil {
				panic(processingError{fmt.Errorf("streams: %s: deserializing the left key: %w", op, err)})
			}
			lv, _, _ := kvView{c.store(l.store)}.get(pk)
			if !bytes.Equal(hashOf(lv), resp.hash) {
				return // an answer for an older left value
			}
			var out any
			switch {
			case lv == nil:
			case resp.value == nil && !left:
			default:
				var ov any
				if resp.value != nil {
					if ov, err = rvs.de(respTopic, resp.value); err != nil {
						panic(processingError{fmt.Errorf("streams: %s: deserializing the right value: %w", op, err)})
					}
				}
				out = joiner(lv, ov)
			}
			c.forward(record{key: pk, value: out, ts: rec.ts, headers: rec.headers})
		}}
	}}, respSrc)
	store := o.store
	if store == "" {
		store = b.newStoreName("KTABLE-FK-JOIN-OUTPUT-")
	}
	return materializeTable[K, VR](b, base+"-OUTPUT", resolver, store, o, l.ks, defaultSerde[VR](), func(r record) change {
		return change{newV: r.value}
	})
}
