package restproxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/clientauth"
)

// v2 consumer instances (/consumers/{group}/instances/{instance}): each is
// a real Kafka consumer of the group (a franz-go client), made by the
// instance's creator's identity and usable by that identity alone, so the
// broker authorizes its fetches and commits as the creator's own. An
// instance not used for consumer.instance.timeout.ms is closed (leaving
// its group).

// consumerInstance is one v2 consumer.
type consumerInstance struct {
	group, name string
	format      string // BINARY, JSON, AVRO, JSONSCHEMA, PROTOBUF
	owner       identity
	sec         *clientauth.Security
	reset       string // earliest or latest
	autoCommit  bool
	minBytes    int32
	reqTimeout  time.Duration
	lastUsed    atomic.Int64
	// busy serializes the instance's requests, as Confluent's do; the
	// fields below it are owned by its holder.
	busy     chan struct{}
	client   *kgo.Client
	adm      *kadm.Client
	topics   []string // the subscription
	pattern  string
	assigned []topicPartition // the manual assignment
	// mu guards pending and positions, also touched by the client's
	// revocation callback.
	mu      sync.Mutex
	pending []*kgo.Record
	// groupAssigned is what the group assigned the subscription.
	groupAssigned map[string]map[int32]bool
	positions     map[string]map[int32]kgo.EpochOffset // next offset to return, per partition returned from
}

type topicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// consumerRegistry holds the instances and expires idle ones.
type consumerRegistry struct {
	p    *Proxy
	mu   sync.Mutex // guards m
	m    map[string]*consumerInstance
	stop chan struct{}
	done sync.WaitGroup
}

func newConsumerRegistry(p *Proxy) *consumerRegistry {
	return &consumerRegistry{p: p, m: map[string]*consumerInstance{}, stop: make(chan struct{})}
}

func instanceKey(group, name string) string { return group + "\x00" + name }

func (cr *consumerRegistry) start() {
	cr.done.Add(1)
	go func() {
		defer cr.done.Done()
		every := cr.p.cfg.ConsumerInstanceTimeout / 4
		if every > time.Second {
			every = time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-cr.stop:
				return
			case <-t.C:
				cr.expire(time.Now().Add(-cr.p.cfg.ConsumerInstanceTimeout).UnixNano())
			}
		}
	}()
}

// expire closes the instances last used before the cutoff.
func (cr *consumerRegistry) expire(before int64) {
	var idle []*consumerInstance
	cr.mu.Lock()
	for k, ci := range cr.m {
		if ci.lastUsed.Load() < before {
			idle = append(idle, ci)
			delete(cr.m, k)
		}
	}
	cr.mu.Unlock()
	for _, ci := range idle {
		ci.busy <- struct{}{}
		ci.closeClient()
		<-ci.busy
	}
}

func (cr *consumerRegistry) close() {
	select {
	case <-cr.stop:
	default:
		close(cr.stop)
	}
	cr.done.Wait()
	cr.expire(1<<63 - 1)
}

func (p *Proxy) routesV2Consumers() {
	pre := "/consumers/{group}/instances/{instance}"
	p.v2("POST /consumers/{group}", p.v2CreateConsumer)
	p.v2("DELETE "+pre, p.v2DeleteConsumer)
	p.v2("POST "+pre+"/subscription", p.withInstance(p.v2Subscribe))
	p.v2("GET "+pre+"/subscription", p.withInstance(p.v2Subscription))
	p.v2("DELETE "+pre+"/subscription", p.withInstance(p.v2Unsubscribe))
	p.v2("POST "+pre+"/assignments", p.withInstance(p.v2Assign))
	p.v2("GET "+pre+"/assignments", p.withInstance(p.v2Assignments))
	p.v2("POST "+pre+"/positions", p.withInstance(p.v2Seek))
	p.v2("POST "+pre+"/positions/beginning", p.withInstance(p.v2SeekBeginning))
	p.v2("POST "+pre+"/positions/end", p.withInstance(p.v2SeekEnd))
	p.v2("GET "+pre+"/records", p.withInstance(p.v2Records))
	p.v2("POST "+pre+"/offsets", p.withInstance(p.v2Commit))
	p.v2("GET "+pre+"/offsets", p.withInstance(p.v2Committed))
}

// createConsumerRequest is v2's CreateConsumerInstanceRequest; numbers may
// come as strings, as Confluent accepts them.
type createConsumerRequest struct {
	Name            string      `json:"name"`
	ID              string      `json:"id"`
	Format          string      `json:"format"`
	AutoOffsetReset string      `json:"auto.offset.reset"`
	AutoCommit      json.Number `json:"auto.commit.enable"`
	FetchMinBytes   json.Number `json:"fetch.min.bytes"`
	RequestTimeout  json.Number `json:"consumer.request.timeout.ms"`
}

// UnmarshalJSON accepts auto.commit.enable as a string or a boolean.
func (c *createConsumerRequest) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	str := func(k string) string {
		switch v := raw[k].(type) {
		case string:
			return v
		case bool:
			return strconv.FormatBool(v)
		case float64:
			return strconv.FormatInt(int64(v), 10)
		}
		return ""
	}
	c.Name, c.ID, c.Format, c.AutoOffsetReset = str("name"), str("id"), str("format"), str("auto.offset.reset")
	c.AutoCommit, c.FetchMinBytes, c.RequestTimeout = json.Number(str("auto.commit.enable")), json.Number(str("fetch.min.bytes")), json.Number(str("consumer.request.timeout.ms"))
	return nil
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (p *Proxy) v2CreateConsumer(w http.ResponseWriter, r *http.Request) error {
	id, sec, err := p.clients.security(r)
	if err != nil {
		return err
	}
	var req createConsumerRequest
	if r.ContentLength != 0 {
		if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
			return err
		}
	}
	ci := &consumerInstance{group: r.PathValue("group"), owner: id, sec: sec, format: fmtBinary, reset: "latest",
		autoCommit: true, reqTimeout: p.cfg.ConsumerRequestTimeout, busy: make(chan struct{}, 1),
		positions: map[string]map[int32]kgo.EpochOffset{}}
	ci.name = req.Name
	if ci.name == "" {
		ci.name = req.ID
	}
	if ci.name == "" {
		ci.name = "rest-consumer-" + p.cfg.ID + "-" + randomID()
	}
	if req.Format != "" {
		switch f := strings.ToUpper(req.Format); f {
		case fmtBinary, fmtJSON, fmtAvro, fmtJSONSchema, fmtProtobuf:
			ci.format = f
		default:
			return errf(codeInvalidConsumerConf, "Invalid consumer configuration: invalid embedded format %s for new consumer.", req.Format)
		}
	}
	switch v := strings.ToLower(req.AutoOffsetReset); v {
	case "":
	case "earliest", "smallest":
		ci.reset = "earliest"
	case "latest", "largest":
		ci.reset = "latest"
	default:
		return errf(codeInvalidConsumerConf, "Invalid consumer configuration: auto.offset.reset must be earliest or latest, not %q", req.AutoOffsetReset)
	}
	if req.AutoCommit != "" {
		b, err := strconv.ParseBool(string(req.AutoCommit))
		if err != nil {
			return errf(codeInvalidConsumerConf, "Invalid consumer configuration: auto.commit.enable must be true or false")
		}
		ci.autoCommit = b
	}
	if req.FetchMinBytes != "" {
		n, err := strconv.ParseInt(string(req.FetchMinBytes), 10, 32)
		if err != nil || n < 0 {
			return errf(codeInvalidConsumerConf, "Invalid consumer configuration: fetch.min.bytes must be a non-negative integer")
		}
		ci.minBytes = int32(n)
	}
	if req.RequestTimeout != "" {
		n, err := strconv.ParseInt(string(req.RequestTimeout), 10, 64)
		if err != nil || n < 0 {
			return errf(codeInvalidConsumerConf, "Invalid consumer configuration: consumer.request.timeout.ms must be a non-negative integer")
		}
		ci.reqTimeout = time.Duration(n) * time.Millisecond
	}
	ci.lastUsed.Store(time.Now().UnixNano())
	k := instanceKey(ci.group, ci.name)
	p.consumers.mu.Lock()
	_, exists := p.consumers.m[k]
	if !exists {
		p.consumers.m[k] = ci
	}
	p.consumers.mu.Unlock()
	if exists {
		return errf(codeConsumerExists, "Consumer with specified consumer ID already exists in the specified consumer group.")
	}
	writeJSON(w, http.StatusOK, contentTypeV2, map[string]string{
		"instance_id": ci.name,
		"base_uri":    baseURL(r) + "/consumers/" + ci.group + "/instances/" + ci.name,
	})
	return nil
}

// lookup is the request's instance, if its identity owns it.
func (p *Proxy) lookup(r *http.Request) (*consumerInstance, error) {
	id, _, err := p.clients.security(r)
	if err != nil {
		return nil, err
	}
	p.consumers.mu.Lock()
	ci := p.consumers.m[instanceKey(r.PathValue("group"), r.PathValue("instance"))]
	p.consumers.mu.Unlock()
	if ci == nil || ci.owner != id {
		return nil, errConsumerNotFound()
	}
	ci.lastUsed.Store(time.Now().UnixNano())
	return ci, nil
}

// withInstance runs h holding the instance's turn.
func (p *Proxy) withInstance(h func(http.ResponseWriter, *http.Request, *consumerInstance) error) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		ci, err := p.lookup(r)
		if err != nil {
			return err
		}
		select {
		case ci.busy <- struct{}{}:
		case <-r.Context().Done():
			return r.Context().Err()
		}
		defer func() { <-ci.busy }()
		return h(w, r, ci)
	}
}

func (p *Proxy) v2DeleteConsumer(w http.ResponseWriter, r *http.Request) error {
	ci, err := p.lookup(r)
	if err != nil {
		return err
	}
	k := instanceKey(ci.group, ci.name)
	p.consumers.mu.Lock()
	delete(p.consumers.m, k)
	p.consumers.mu.Unlock()
	ci.busy <- struct{}{}
	ci.closeClient()
	<-ci.busy
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// closeClient leaves the group and drops the client (held turn).
func (ci *consumerInstance) closeClient() {
	if ci.client != nil {
		if ci.autoCommit {
			ci.commitPositions(context.Background(), true)
		}
		ci.client.Close()
	}
	ci.client, ci.adm = nil, nil
	ci.mu.Lock()
	ci.pending, ci.positions, ci.groupAssigned = nil, map[string]map[int32]kgo.EpochOffset{}, nil
	ci.mu.Unlock()
}

// open makes the instance's client for a subscription (group consumer)
// or an assignment (direct partitions, committing through the group).
func (p *Proxy) open(ci *consumerInstance, extra ...kgo.Opt) error {
	opts := append(p.clients.baseOpts(ci.sec),
		kgo.ClientID("vltava-rest-consumer-"+ci.name),
		kgo.FetchMinBytes(ci.minBytes),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if ci.reset == "earliest" {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	} else {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return errf(codeInvalidConsumerConf, "Invalid consumer configuration: %v", err)
	}
	ci.client, ci.adm = cl, kadm.NewClient(cl)
	return nil
}

// dropRevoked forgets what was fetched and not returned from partitions
// the group took away; their positions are committed first with
// auto-commit, as Kafka's consumer commits on revocation.
func (ci *consumerInstance) dropRevoked(cx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	ci.mu.Lock()
	gone := map[string]map[int32]bool{}
	for t, ps := range revoked {
		gone[t] = map[int32]bool{}
		for _, p := range ps {
			gone[t][p] = true
		}
	}
	kept := ci.pending[:0]
	for _, rec := range ci.pending {
		if !gone[rec.Topic][rec.Partition] {
			kept = append(kept, rec)
		}
	}
	ci.pending = kept
	for t, ps := range revoked {
		for _, p := range ps {
			delete(ci.groupAssigned[t], p)
		}
	}
	commit := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range ci.positions {
		for part, eo := range ps {
			if gone[t][part] {
				if commit[t] == nil {
					commit[t] = map[int32]kgo.EpochOffset{}
				}
				commit[t][part] = eo
				delete(ps, part)
			}
		}
	}
	ci.mu.Unlock()
	if ci.autoCommit && len(commit) > 0 {
		cl.CommitOffsetsSync(cx, commit, nil)
	}
}

// addAssigned records partitions the group assigned.
func (ci *consumerInstance) addAssigned(m map[string][]int32) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.groupAssigned == nil {
		ci.groupAssigned = map[string]map[int32]bool{}
	}
	for t, ps := range m {
		if ci.groupAssigned[t] == nil {
			ci.groupAssigned[t] = map[int32]bool{}
		}
		for _, p := range ps {
			ci.groupAssigned[t][p] = true
		}
	}
}

type subscriptionRequest struct {
	Topics       []string `json:"topics"`
	TopicPattern string   `json:"topic_pattern"`
}

func (p *Proxy) v2Subscribe(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	var req subscriptionRequest
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	if len(req.Topics) > 0 && req.TopicPattern != "" {
		return errf(codeAlreadySubscribed, "Consumer cannot have multiple subscriptions of different types (topics, topic pattern).")
	}
	if len(req.Topics) == 0 && req.TopicPattern == "" {
		return errPayload("topics or topic_pattern is required.")
	}
	if len(ci.assigned) > 0 {
		return errf(codeIllegalState, "Illegal state: Subscription to topics, partitions and pattern are mutually exclusive")
	}
	if ci.client != nil {
		ci.closeClient()
	}
	opts := []kgo.Opt{kgo.ConsumerGroup(ci.group), kgo.DisableAutoCommit(),
		kgo.OnPartitionsRevoked(func(cx context.Context, cl *kgo.Client, m map[string][]int32) { ci.dropRevoked(cx, cl, m) }),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { ci.addAssigned(m) }),
		kgo.OnPartitionsLost(func(cx context.Context, cl *kgo.Client, m map[string][]int32) { ci.dropRevoked(cx, cl, m) }),
	}
	if req.TopicPattern != "" {
		if _, err := regexp.Compile(req.TopicPattern); err != nil {
			return errPayload("Invalid topic_pattern: %v.", err)
		}
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(req.TopicPattern))
	} else {
		opts = append(opts, kgo.ConsumeTopics(req.Topics...))
	}
	if err := p.open(ci, opts...); err != nil {
		return err
	}
	ci.topics, ci.pattern = req.Topics, req.TopicPattern
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (p *Proxy) v2Subscription(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	topics := []string{}
	switch {
	case len(ci.topics) > 0:
		topics = append(topics, ci.topics...)
	case ci.pattern != "" && ci.client != nil:
		topics = append(topics, ci.client.GetConsumeTopics()...)
	}
	sort.Strings(topics)
	writeJSON(w, http.StatusOK, contentTypeV2, map[string]any{"topics": topics})
	return nil
}

func (p *Proxy) v2Unsubscribe(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	if len(ci.topics) > 0 || ci.pattern != "" {
		ci.closeClient()
	}
	ci.topics, ci.pattern = nil, ""
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type partitionsRequest struct {
	Partitions []topicPartition `json:"partitions"`
}

// v2Assign assigns partitions by hand: the client consumes them directly,
// from the group's committed offsets (else auto.offset.reset).
func (p *Proxy) v2Assign(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	var req partitionsRequest
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	if len(ci.topics) > 0 || ci.pattern != "" {
		return errf(codeIllegalState, "Illegal state: Subscription to topics, partitions and pattern are mutually exclusive")
	}
	if ci.client != nil {
		ci.closeClient()
	}
	ci.assigned = nil
	if len(req.Partitions) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	// Start where the group committed, as a Kafka consumer's assign does.
	if err := p.open(ci); err != nil {
		return err
	}
	cx, cancel := ctx(r)
	defer cancel()
	committed, err := ci.adm.FetchOffsets(cx, ci.group)
	if err != nil {
		ci.closeClient()
		return err
	}
	ci.closeClient()
	parts := map[string]map[int32]kgo.Offset{}
	reset := kgo.NewOffset().AtEnd()
	if ci.reset == "earliest" {
		reset = kgo.NewOffset().AtStart()
	}
	for _, tp := range req.Partitions {
		if parts[tp.Topic] == nil {
			parts[tp.Topic] = map[int32]kgo.Offset{}
		}
		o := reset
		if c, ok := committed.Lookup(tp.Topic, tp.Partition); ok && c.Err == nil && c.At >= 0 {
			o = kgo.NewOffset().At(c.At)
		}
		parts[tp.Topic][tp.Partition] = o
	}
	if err := p.open(ci, kgo.ConsumePartitions(parts)); err != nil {
		return err
	}
	ci.assigned = req.Partitions
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (p *Proxy) v2Assignments(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	out := []topicPartition{}
	if len(ci.assigned) > 0 {
		out = append(out, ci.assigned...)
	} else if ci.client != nil {
		ci.mu.Lock()
		for t, ps := range ci.groupAssigned {
			for part := range ps {
				out = append(out, topicPartition{t, part})
			}
		}
		ci.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	writeJSON(w, http.StatusOK, contentTypeV2, map[string]any{"partitions": out})
	return nil
}

type offsetsRequest struct {
	Offsets []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Metadata  string `json:"metadata"`
	} `json:"offsets"`
}

// seekTo moves the instance's positions and forgets what was fetched
// from those partitions.
func (ci *consumerInstance) seekTo(to map[string]map[int32]kgo.EpochOffset) {
	ci.mu.Lock()
	kept := ci.pending[:0]
	for _, rec := range ci.pending {
		if _, moved := to[rec.Topic][rec.Partition]; !moved {
			kept = append(kept, rec)
		}
	}
	ci.pending = kept
	for t, ps := range to {
		if ci.positions[t] == nil {
			ci.positions[t] = map[int32]kgo.EpochOffset{}
		}
		for part, eo := range ps {
			ci.positions[t][part] = eo // the position a commit of everything commits, as Kafka's
		}
	}
	manual := len(ci.assigned) > 0
	ci.mu.Unlock()
	if !manual {
		ci.client.SetOffsets(to)
		return
	}
	// A manual assignment consumes directly, and SetOffsets skips a
	// partition whose metadata the client has not loaded yet, so a seek
	// right after the assignment would be lost. Removing and re-adding the
	// partitions at the new offsets holds either way, and drops what was
	// fetched from them.
	remove := map[string][]int32{}
	add := map[string]map[int32]kgo.Offset{}
	assigned := map[topicPartition]bool{}
	for _, tp := range ci.assigned {
		assigned[tp] = true
	}
	for t, ps := range to {
		add[t] = map[int32]kgo.Offset{}
		for part, eo := range ps {
			if !assigned[topicPartition{Topic: t, Partition: part}] {
				continue // as SetOffsets skips what is not consumed
			}
			remove[t] = append(remove[t], part)
			add[t][part] = kgo.NewOffset().At(eo.Offset)
		}
	}
	ci.client.RemoveConsumePartitions(remove)
	ci.client.AddConsumePartitions(add)
}

func (p *Proxy) v2Seek(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	var req offsetsRequest
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	if ci.client == nil {
		return errf(codeIllegalState, "Illegal state: No current assignment for the partitions")
	}
	to := map[string]map[int32]kgo.EpochOffset{}
	for _, o := range req.Offsets {
		if to[o.Topic] == nil {
			to[o.Topic] = map[int32]kgo.EpochOffset{}
		}
		to[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	}
	ci.seekTo(to)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (p *Proxy) v2SeekBeginning(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	return p.seekEnds(w, r, ci, true)
}

func (p *Proxy) v2SeekEnd(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	return p.seekEnds(w, r, ci, false)
}

// seekEnds seeks the partitions to their log start or end offsets, read
// with ListOffsets.
func (p *Proxy) seekEnds(w http.ResponseWriter, r *http.Request, ci *consumerInstance, start bool) error {
	var req partitionsRequest
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	if ci.client == nil {
		return errf(codeIllegalState, "Illegal state: No current assignment for the partitions")
	}
	topics := map[string]bool{}
	for _, tp := range req.Partitions {
		topics[tp.Topic] = true
	}
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	cx, cancel := ctx(r)
	defer cancel()
	var lo kadm.ListedOffsets
	var err error
	if start {
		lo, err = ci.adm.ListStartOffsets(cx, names...)
	} else {
		lo, err = ci.adm.ListEndOffsets(cx, names...)
	}
	if err != nil {
		return err
	}
	to := map[string]map[int32]kgo.EpochOffset{}
	for _, tp := range req.Partitions {
		o, ok := lo.Lookup(tp.Topic, tp.Partition)
		if !ok || o.Err != nil {
			return errPartitionNotFound()
		}
		if to[tp.Topic] == nil {
			to[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		to[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	}
	ci.seekTo(to)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// v2Record is one record of a v2 records GET.
type v2Record struct {
	Topic     string          `json:"topic"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
}

// acceptFormat is the embedded format a records GET's Accept names ("" if
// it names none: any).
func acceptFormat(r *http.Request) string {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		switch mt {
		case "application/vnd.kafka.binary.v2+json":
			return fmtBinary
		case "application/vnd.kafka.json.v2+json":
			return fmtJSON
		case "application/vnd.kafka.avro.v2+json":
			return fmtAvro
		case "application/vnd.kafka.jsonschema.v2+json":
			return fmtJSONSchema
		case "application/vnd.kafka.protobuf.v2+json":
			return fmtProtobuf
		}
	}
	return ""
}

func formatContentType(f string) string {
	return "application/vnd.kafka." + strings.ToLower(f) + ".v2+json"
}

// v2Records returns fetched records up to max_bytes (keys and values
// counted), waiting up to timeout ms for some to arrive.
func (p *Proxy) v2Records(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	if f := acceptFormat(r); f != "" && f != ci.format {
		return errf(codeFormatMismatch, "The requested embedded data format does not match the deserializer for this consumer instance")
	}
	q := r.URL.Query()
	timeout := ci.reqTimeout
	if v := q.Get("timeout"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return bareErr(http.StatusBadRequest, "timeout must be a non-negative number of milliseconds")
		}
		if d := time.Duration(n) * time.Millisecond; d < timeout {
			timeout = d
		}
	}
	maxBytes := p.cfg.ConsumerRequestMaxBytes
	if v := q.Get("max_bytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return bareErr(http.StatusBadRequest, "max_bytes must be a positive number")
		}
		if n < maxBytes {
			maxBytes = n
		}
	}
	if ci.client == nil {
		return errf(codeIllegalState, "Illegal state: Consumer is not subscribed to any topics or assigned any partitions")
	}
	ci.mu.Lock()
	have := len(ci.pending)
	ci.mu.Unlock()
	if have == 0 && timeout > 0 {
		cx, cancel := context.WithTimeout(r.Context(), timeout)
		fs := ci.client.PollRecords(cx, 10000)
		cancel()
		var fetchErr error
		fs.EachError(func(t string, part int32, err error) {
			if err != context.DeadlineExceeded && err != context.Canceled && fetchErr == nil {
				fetchErr = err
			}
		})
		if fetchErr != nil && fs.NumRecords() == 0 {
			return fetchErr
		}
		recs := fs.Records()
		ci.mu.Lock()
		ci.pending = append(ci.pending, recs...)
		ci.mu.Unlock()
	}
	// Records are taken from the front of what was fetched, decoded in
	// the instance's format, until max_bytes; one that cannot be decoded
	// stops the batch and, first in line, is the request's error (the
	// consumer stays before it; a seek moves past it).
	out := []v2Record{}
	var size int64
	ci.mu.Lock()
	candidates := append([]*kgo.Record(nil), ci.pending...)
	ci.mu.Unlock()
	var decodeErr error
	var batch []*kgo.Record
	for _, rec := range candidates {
		sz := int64(len(rec.Key) + len(rec.Value))
		if len(batch) > 0 && size+sz > maxBytes {
			break
		}
		k, err := p.decodeData(r.Context(), ci.format, rec.Key)
		if err == nil {
			var v json.RawMessage
			if v, err = p.decodeData(r.Context(), ci.format, rec.Value); err == nil {
				out = append(out, v2Record{Topic: rec.Topic, Key: k, Value: v, Partition: rec.Partition, Offset: rec.Offset})
			}
		}
		if err != nil {
			decodeErr = err
			break
		}
		size += sz
		batch = append(batch, rec)
	}
	if len(batch) == 0 && decodeErr != nil {
		return decodeErr
	}
	ci.mu.Lock()
	// The revocation callback may have dropped records meanwhile: remove
	// exactly those returned.
	returned := map[*kgo.Record]bool{}
	for _, rec := range batch {
		returned[rec] = true
	}
	kept := ci.pending[:0]
	for _, rec := range ci.pending {
		if !returned[rec] {
			kept = append(kept, rec)
		}
	}
	ci.pending = kept
	for _, rec := range batch {
		if ci.positions[rec.Topic] == nil {
			ci.positions[rec.Topic] = map[int32]kgo.EpochOffset{}
		}
		ci.positions[rec.Topic][rec.Partition] = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset + 1}
	}
	ci.mu.Unlock()
	if ci.autoCommit && len(batch) > 0 {
		ci.commitPositions(r.Context(), false)
	}
	writeJSON(w, http.StatusOK, formatContentType(ci.format), out)
	return nil
}

// decodeData renders a record's key or value in the instance's format.
func (p *Proxy) decodeData(cx context.Context, format string, b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	switch format {
	case fmtBinary:
		return json.Marshal(base64.StdEncoding.EncodeToString(b))
	case fmtJSON:
		if !json.Valid(b) {
			return nil, errf(codeSerialization, "Error deserializing message: the data is not JSON")
		}
		return json.RawMessage(b), nil
	}
	id, payload, err := decodeWire(b)
	if err != nil {
		return nil, errf(codeSerialization, "Error deserializing message: %v", err)
	}
	s, err := p.schemas.byID(cx, id)
	if err != nil {
		return nil, err
	}
	return s.codec.decode(payload)
}

// commitPositions commits the offsets after the records returned; sync
// waits for the commit, else it is sent in the background (auto-commit).
func (ci *consumerInstance) commitPositions(cx context.Context, sync bool) error {
	ci.mu.Lock()
	to := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range ci.positions {
		to[t] = map[int32]kgo.EpochOffset{}
		for part, eo := range ps {
			to[t][part] = eo
		}
	}
	ci.mu.Unlock()
	if len(to) == 0 {
		return nil
	}
	return ci.commit(cx, to, sync)
}

// commit commits offsets for the instance's group: through the group
// member with a subscription, as a simple (generation -1) commit with a
// manual assignment.
func (ci *consumerInstance) commit(cx context.Context, to map[string]map[int32]kgo.EpochOffset, sync bool) error {
	if len(ci.assigned) > 0 {
		os := kadm.Offsets{}
		for t, ps := range to {
			for part, eo := range ps {
				os.Add(kadm.Offset{Topic: t, Partition: part, At: eo.Offset, LeaderEpoch: eo.Epoch})
			}
		}
		if !sync {
			go ci.adm.CommitAllOffsets(context.Background(), ci.group, os)
			return nil
		}
		return ci.adm.CommitAllOffsets(cx, ci.group, os)
	}
	if !sync {
		ci.client.CommitOffsets(context.Background(), to, nil)
		return nil
	}
	var cerr error
	ci.client.CommitOffsetsSync(cx, to, func(_ *kgo.Client, _ *kmsgOffsetCommitRequest, resp *kmsgOffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, pt := range t.Partitions {
				if e := kerrFor(pt.ErrorCode); e != nil && cerr == nil {
					cerr = e
				}
			}
		}
	})
	return cerr
}

// v2Commit commits the given offsets (each the offset of the last record
// consumed: the group's committed offset is the next, as Confluent's), or
// with no body every position returned so far.
func (p *Proxy) v2Commit(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	if ci.client == nil {
		return errf(codeIllegalState, "Illegal state: Consumer is not subscribed to any topics or assigned any partitions")
	}
	var req offsetsRequest
	if r.ContentLength != 0 {
		if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
			if ae, ok := err.(*apiError); !ok || ae.code != codeInvalidPayload {
				return err
			}
		}
	}
	cx, cancel := ctx(r)
	defer cancel()
	type committedOffset struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Consumed  int64  `json:"consumed"`
		Committed int64  `json:"committed"`
	}
	out := []committedOffset{}
	to := map[string]map[int32]kgo.EpochOffset{}
	if len(req.Offsets) > 0 {
		for _, o := range req.Offsets {
			if to[o.Topic] == nil {
				to[o.Topic] = map[int32]kgo.EpochOffset{}
			}
			to[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset + 1}
		}
	} else {
		ci.mu.Lock()
		for t, ps := range ci.positions {
			to[t] = map[int32]kgo.EpochOffset{}
			for part, eo := range ps {
				to[t][part] = eo
			}
		}
		ci.mu.Unlock()
	}
	if len(to) > 0 {
		if err := ci.commit(cx, to, true); err != nil {
			return err
		}
	}
	for t, ps := range to {
		for part, eo := range ps {
			out = append(out, committedOffset{Topic: t, Partition: part, Consumed: eo.Offset - 1, Committed: eo.Offset})
		}
	}
	writeJSON(w, http.StatusOK, contentTypeV2, out)
	return nil
}

// v2Committed answers the group's committed offsets of the partitions
// named in the (GET) body.
func (p *Proxy) v2Committed(w http.ResponseWriter, r *http.Request, ci *consumerInstance) error {
	var req partitionsRequest
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	if ci.client == nil {
		if err := p.open(ci); err != nil {
			return err
		}
		defer ci.closeClient()
	}
	cx, cancel := ctx(r)
	defer cancel()
	committed, err := ci.adm.FetchOffsets(cx, ci.group)
	if err != nil {
		return err
	}
	type offsetMeta struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Metadata  string `json:"metadata"`
	}
	out := []offsetMeta{}
	for _, tp := range req.Partitions {
		if c, ok := committed.Lookup(tp.Topic, tp.Partition); ok && c.Err == nil && c.At >= 0 {
			out = append(out, offsetMeta{Topic: tp.Topic, Partition: tp.Partition, Offset: c.At, Metadata: c.Metadata})
		}
	}
	writeJSON(w, http.StatusOK, contentTypeV2, map[string]any{"offsets": out})
	return nil
}

type (
	kmsgOffsetCommitRequest  = kmsg.OffsetCommitRequest
	kmsgOffsetCommitResponse = kmsg.OffsetCommitResponse
)

func kerrFor(code int16) error { return kerr.ErrorForCode(code) }
