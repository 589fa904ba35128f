package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/connect"
)

// The three connectors under Kafka's class names, for a Connect cluster
// whose worker writes to the target cluster: the worker produces what the
// tasks poll and stores the source offsets; the tasks read the source, and
// create topics, write offset syncs and sync group offsets with their own
// clients of both clusters.
const (
	SourceConnectorClass     = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
	CheckpointConnectorClass = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
	HeartbeatConnectorClass  = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
	connectorVersion         = "4.0.0"
)

func init() {
	connect.RegisterSource(SourceConnectorClass, connectorVersion, func() connect.SourceConnector { return &mirrorConnector{kind: kindSource} })
	connect.RegisterSource(CheckpointConnectorClass, connectorVersion, func() connect.SourceConnector { return &mirrorConnector{kind: kindCheckpoint} })
	connect.RegisterSource(HeartbeatConnectorClass, connectorVersion, func() connect.SourceConnector { return &mirrorConnector{kind: kindHeartbeat} })
}

type connectorKind int

const (
	kindSource connectorKind = iota
	kindCheckpoint
	kindHeartbeat
)

func (k connectorKind) name() string {
	return [...]string{"MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"}[k]
}

// The connector keys of Kafka's MirrorConnectorConfig naming the clusters;
// "source.cluster.<client key>" and "target.cluster.<client key>" are each
// cluster's client settings.
const (
	keySourceAlias = "source.cluster.alias"
	keyTargetAlias = "target.cluster.alias"
	prefixSource   = "source.cluster."
	prefixTarget   = "target.cluster."
)

// workerKey reports the keys the Connect worker takes for itself.
func workerKey(k string) bool {
	switch k {
	case "name", "connector.class", "tasks.max", "key.converter", "value.converter", "header.converter",
		"config.action.reload", "exactly.once.support", "transaction.boundary", "offsets.storage.topic",
		"transforms", "predicates":
		return true
	}
	for _, p := range []string{"key.converter.", "value.converter.", "header.converter.", "transforms.", "predicates.",
		"errors.", "topic.creation.", "producer.override.", "consumer.override.", "admin.override.", "transaction.boundary."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// dedicatedOnly are flow keys that only the dedicated mode has a use for:
// on a Connect cluster the worker stores offsets and runs transactions.
var dedicatedOnly = map[string]string{
	"offset.flush.interval.ms":            "a worker setting",
	"offset.storage.replication.factor":   "a worker setting",
	"exactly.once.source.support":         "a worker setting (set exactly.once.source.support=enabled on the workers)",
	"dedicated.mode.enable.internal.rest": "a dedicated-mode setting",
	"vltava.preserve.offsets":             "a dedicated-mode setting (on a Connect cluster the worker's producer assigns the offsets; run `vltava mirror`)",
}

// connectorFlow turns a connector config into the flow it runs, with the
// same keys and defaults as mm2.properties; an unknown key is refused by
// name, as `vltava mirror` refuses it.
func connectorFlow(props map[string]string) (Flow, Cluster, Cluster, error) {
	src := strings.TrimSpace(props[keySourceAlias])
	if src == "" {
		src = "source"
	}
	tgt := strings.TrimSpace(props[keyTargetAlias])
	if tgt == "" {
		tgt = "target"
	}
	if src == tgt {
		return Flow{}, Cluster{}, Cluster{}, fmt.Errorf("%s and %s must differ (both %q)", keySourceAlias, keyTargetAlias, src)
	}
	mm2 := map[string]string{"clusters": src + ", " + tgt, src + "->" + tgt + ".enabled": "true"}
	for k, v := range props {
		switch {
		case workerKey(k), k == keySourceAlias, k == keyTargetAlias:
		case dedicatedOnly[k] != "":
			return Flow{}, Cluster{}, Cluster{}, fmt.Errorf("%s: not a connector setting: %s", k, dedicatedOnly[k])
		case strings.HasPrefix(k, prefixSource):
			mm2[src+"."+strings.TrimPrefix(k, prefixSource)] = v
		case strings.HasPrefix(k, prefixTarget):
			mm2[tgt+"."+strings.TrimPrefix(k, prefixTarget)] = v
		case strings.Contains(k, "->"):
			return Flow{}, Cluster{}, Cluster{}, fmt.Errorf("%s: a connector runs one flow (%s->%s): set the key without the prefix", k, src, tgt)
		default:
			if _, ok := flowSettings[k]; !ok && !isClientKey(k) {
				return Flow{}, Cluster{}, Cluster{}, fmt.Errorf("%s: unsupported configuration", k)
			}
			mm2[k] = v
		}
	}
	for _, c := range []struct{ alias, prefix string }{{src, prefixSource}, {tgt, prefixTarget}} {
		if strings.TrimSpace(mm2[c.alias+".bootstrap.servers"]) == "" {
			return Flow{}, Cluster{}, Cluster{}, fmt.Errorf("%sbootstrap.servers is required", c.prefix)
		}
	}
	cfg, err := Parse(mm2)
	if err != nil {
		// Name the connector's keys, not the mm2.properties ones.
		msg := strings.NewReplacer(src+"->"+tgt+": ", "", src+".", prefixSource, tgt+".", prefixTarget).Replace(err.Error())
		return Flow{}, Cluster{}, Cluster{}, errors.New(msg)
	}
	if len(cfg.Flows) != 1 {
		return Flow{}, Cluster{}, Cluster{}, fmt.Errorf("no flow %s->%s", src, tgt)
	}
	return cfg.Flows[0], cfg.Clusters[src], cfg.Clusters[tgt], nil
}

var connectorDef = connect.NewConfigDef().
	Define(connect.ConfigKey{Name: keySourceAlias, Type: connect.TypeString, Default: "source", Importance: connect.High, Doc: "Alias of source cluster"}).
	Define(connect.ConfigKey{Name: keyTargetAlias, Type: connect.TypeString, Default: "target", Importance: connect.High, Doc: "Alias of target cluster. Used in metrics reporting."}).
	Define(connect.ConfigKey{Name: "source.cluster.bootstrap.servers", Type: connect.TypeList, Required: true, Importance: connect.High, Doc: "The source cluster's bootstrap servers"}).
	Define(connect.ConfigKey{Name: "target.cluster.bootstrap.servers", Type: connect.TypeList, Required: true, Importance: connect.High, Doc: "The target cluster's bootstrap servers: the cluster the Connect workers write to"})

// mirrorConnector is one of the three connectors: each runs one task, which
// follows new topics and partitions itself.
type mirrorConnector struct {
	kind  connectorKind
	props map[string]string
}

func (c *mirrorConnector) Version() string                     { return connectorVersion }
func (c *mirrorConnector) Config() *connect.ConfigDef          { return connectorDef }
func (c *mirrorConnector) Initialize(connect.ConnectorContext) {}
func (c *mirrorConnector) Stop() error                         { return nil }

// Validate implements connect.Validator: the flow's keys as the mirror
// parses them.
func (c *mirrorConnector) Validate(props map[string]string) []connect.ConfigValue {
	if _, _, _, err := connectorFlow(props); err != nil {
		return []connect.ConfigValue{{Name: "connector.class", Errors: []string{err.Error()}}}
	}
	return nil
}

func (c *mirrorConnector) Start(props map[string]string) error {
	f, _, _, err := connectorFlow(props)
	if err != nil {
		return err
	}
	switch {
	case c.kind == kindCheckpoint && !f.EmitCheckpoints:
		return fmt.Errorf("emit.checkpoints.enabled is false: %s has nothing to do", c.kind.name())
	case c.kind == kindHeartbeat && !f.EmitHeartbeats:
		return fmt.Errorf("emit.heartbeats.enabled is false: %s has nothing to do", c.kind.name())
	}
	c.props = props
	return nil
}

// TaskConfigs implements connect.Connector: one task.
func (c *mirrorConnector) TaskConfigs(int) ([]map[string]string, error) {
	cfg := map[string]string{}
	for k, v := range c.props {
		if !workerKey(k) {
			cfg[k] = v
		}
	}
	return []map[string]string{cfg}, nil
}

func (c *mirrorConnector) NewTask() connect.SourceTask {
	switch c.kind {
	case kindCheckpoint:
		return &checkpointTask{}
	case kindHeartbeat:
		return &heartbeatTask{}
	}
	return &sourceTask{}
}

// ExactlyOnceSupport implements connect.ExactlyOnceSource: the source task
// reads read_committed and its offsets are the source's, so the worker's
// transactions make the copy exactly once.
func (c *mirrorConnector) ExactlyOnceSupport(map[string]string) connect.ExactlyOnceSupport {
	if c.kind == kindSource {
		return connect.ExactlyOnceSupported
	}
	return connect.ExactlyOnceUnsupported
}

var optionalBytes = &connect.Schema{Type: connect.Bytes, Optional: true}

func taskLogger(f Flow, kind connectorKind) *slog.Logger {
	return slog.Default().With("flow", f.Name(), "connector", kind.name())
}

// toInt64 reads a number from a stored offset map.
func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case float64:
		return int64(x), x == float64(int64(x))
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// sourceTask is MirrorSourceTask: Poll returns the source's records for
// the remote topics, CommitRecord turns the written offsets into offset
// syncs, and a background goroutine refreshes topics, configs and ACLs.
type sourceTask struct {
	ctx    connect.SourceTaskContext
	s      *Source
	cancel context.CancelFunc
	done   chan struct{}

	consumer, srcAdm, tgtCl, syncCl *kgo.Client
}

func (t *sourceTask) Version() string                          { return connectorVersion }
func (t *sourceTask) Initialize(ctx connect.SourceTaskContext) { t.ctx = ctx }

func (t *sourceTask) Start(props map[string]string) (err error) {
	f, src, tgt, err := connectorFlow(props)
	if err != nil {
		return err
	}
	t.s = NewSource(f, src, tgt, taskLogger(f, kindSource))
	t.s.workerOffsets = true
	defer func() {
		if err != nil {
			t.closeClients()
		}
	}()
	if t.srcAdm, err = src.Client(); err != nil {
		return err
	}
	if t.tgtCl, err = tgt.Client(); err != nil {
		return err
	}
	t.syncCl = t.srcAdm
	syncAdm := kadm.NewClient(t.srcAdm)
	if f.OffsetSyncsOnTarget {
		t.syncCl, syncAdm = t.tgtCl, kadm.NewClient(t.tgtCl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ensureTopic(ctx, syncAdm, f.Policy.OffsetSyncsTopic(f.Target), 1, f.OffsetSyncsReplicationFactor, true); err != nil {
		return connect.Retriable(err)
	}
	if t.consumer, err = src.Client(kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.MetadataMinAge(time.Second), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())); err != nil {
		return err
	}
	reader := t.ctx.OffsetStorageReader()
	stored := func(k partitionKey) (int64, bool) {
		off, err := reader.Offset(map[string]any{"cluster": f.Source, "partition": int64(k.partition), "topic": k.topic})
		if err != nil || off == nil {
			return 0, false
		}
		return toInt64(off["offset"])
	}
	topics := newTopicSync(t.s, t.srcAdm, t.tgtCl)
	if err := topics.refresh(ctx, t.consumer, stored); err != nil {
		return connect.Retriable(err)
	}
	if f.SyncTopicACLs {
		topics.syncACLs(ctx)
	}
	bg, bgCancel := context.WithCancel(context.Background())
	t.cancel, t.done = bgCancel, make(chan struct{})
	go func() {
		defer close(t.done)
		t.s.background(bg, topics, t.consumer, stored, t.tgtCl, t.syncCl)
	}()
	return nil
}

func (t *sourceTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	fs := t.consumer.PollFetches(pctx)
	cancel()
	var ferr error
	fs.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		ferr = fmt.Errorf("fetching %s[%d]: %w", topic, p, err)
	})
	if ferr != nil {
		return nil, connect.Retriable(ferr)
	}
	f := t.s.flow
	out := make([]connect.SourceRecord, 0, fs.NumRecords())
	fs.EachRecord(func(r *kgo.Record) {
		p := r.Partition
		sr := connect.SourceRecord{
			Record: connect.Record{
				Topic: f.Policy.FormatRemoteTopic(f.Source, r.Topic), Partition: &p,
				KeySchema: optionalBytes, Key: bytesOrNil(r.Key), ValueSchema: optionalBytes, Value: bytesOrNil(r.Value),
				Timestamp: r.Timestamp,
			},
			SourcePartition: map[string]any{"cluster": f.Source, "partition": int64(r.Partition), "topic": r.Topic},
			SourceOffset:    map[string]any{"offset": r.Offset},
		}
		for _, h := range r.Headers {
			sr.Headers = append(sr.Headers, connect.Header{Key: h.Key, Schema: optionalBytes, Value: bytesOrNil(h.Value)})
		}
		out = append(out, sr)
	})
	return out, nil
}

// bytesOrNil keeps a null key, value or header null (not an empty []byte
// in an interface).
func bytesOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// CommitRecord implements connect.RecordCommitter: the record was written
// at offset of partition on the target, which may call for an offset sync.
func (t *sourceTask) CommitRecord(rec *connect.SourceRecord, partition int32, offset int64) error {
	topic, _ := rec.SourcePartition["topic"].(string)
	upstream, ok := toInt64(rec.SourceOffset["offset"])
	if topic == "" || !ok {
		return fmt.Errorf("record without a source topic and offset: %v %v", rec.SourcePartition, rec.SourceOffset)
	}
	t.s.acked(topic, upstream)(&kgo.Record{Topic: rec.Topic, Partition: partition, Offset: offset}, nil)
	return nil
}

func (t *sourceTask) Commit() error { return nil }

func (t *sourceTask) Stop() error {
	if t.cancel != nil {
		t.cancel()
		<-t.done
	}
	t.closeClients()
	return nil
}

func (t *sourceTask) closeClients() {
	for _, c := range []*kgo.Client{t.consumer, t.srcAdm, t.tgtCl} {
		if c != nil {
			c.Close()
		}
	}
}

// checkpointTask is MirrorCheckpointTask: every
// emit.checkpoints.interval.seconds Poll returns the checkpoints that
// advanced, for the checkpoints topic on the target, and with
// sync.group.offsets.enabled commits them into the target's idle groups.
type checkpointTask struct {
	c              *Checkpointer
	srcCl, tgtCl   *kgo.Client
	stopSyncs      func()
	groups         []string
	next           time.Time
	lastGroups     time.Time
	lastSync       time.Time
	stopOnce       sync.Once
	srcAdm, tgtAdm *kadm.Client
}

func (t *checkpointTask) Version() string                      { return connectorVersion }
func (t *checkpointTask) Initialize(connect.SourceTaskContext) {}
func (t *checkpointTask) Commit() error                        { return nil }

func (t *checkpointTask) Start(props map[string]string) (err error) {
	f, src, tgt, err := connectorFlow(props)
	if err != nil {
		return err
	}
	t.c = NewCheckpointer(f, src, tgt, taskLogger(f, kindCheckpoint))
	defer func() {
		if err != nil {
			t.Stop()
		}
	}()
	if t.srcCl, err = src.Client(); err != nil {
		return err
	}
	if t.tgtCl, err = tgt.Client(); err != nil {
		return err
	}
	t.srcAdm, t.tgtAdm = kadm.NewClient(t.srcCl), kadm.NewClient(t.tgtCl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := t.c.prepare(ctx, t.tgtAdm); err != nil {
		return connect.Retriable(err)
	}
	if t.stopSyncs, err = t.c.followSyncs(context.Background()); err != nil {
		return err
	}
	t.next = time.Now().Add(f.EmitCheckpointsInterval)
	return nil
}

func (t *checkpointTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	f := t.c.flow
	if !waitUntil(ctx, t.next) {
		return nil, nil
	}
	now := time.Now()
	t.next = now.Add(max(f.EmitCheckpointsInterval, 100*time.Millisecond))
	if t.groups == nil || (f.RefreshGroups && now.Sub(t.lastGroups) >= f.RefreshGroupsInterval) {
		groups, err := t.c.listGroups(ctx, t.srcAdm)
		if err != nil {
			return nil, connect.Retriable(err)
		}
		t.groups, t.lastGroups = groups, now
	}
	var out []connect.SourceRecord
	topic := f.Policy.CheckpointsTopic(f.Source)
	zero := int32(0)
	for _, cp := range t.c.due(ctx, t.srcAdm, t.groups) {
		out = append(out, connect.SourceRecord{
			Record:          connect.Record{Topic: topic, Partition: &zero, KeySchema: optionalBytes, Key: cp.Key(), ValueSchema: optionalBytes, Value: cp.Value()},
			SourcePartition: map[string]any{"group": cp.Group, "topic": cp.Topic, "partition": int64(cp.Partition)},
			SourceOffset:    map[string]any{"offset": int64(0)},
		})
	}
	if f.SyncGroupOffsets && now.Sub(t.lastSync) >= f.SyncGroupOffsetsInterval {
		t.lastSync = now
		t.c.syncGroups(ctx, t.tgtAdm)
	}
	return out, nil
}

func (t *checkpointTask) Stop() error {
	t.stopOnce.Do(func() {
		if t.stopSyncs != nil {
			t.stopSyncs()
		}
		for _, c := range []*kgo.Client{t.srcCl, t.tgtCl} {
			if c != nil {
				c.Close()
			}
		}
	})
	return nil
}

// heartbeatTask is MirrorHeartbeatTask: a heartbeat for the heartbeats
// topic every emit.heartbeats.interval.seconds.
type heartbeatTask struct {
	f    Flow
	next time.Time
}

func (t *heartbeatTask) Version() string                      { return connectorVersion }
func (t *heartbeatTask) Initialize(connect.SourceTaskContext) {}
func (t *heartbeatTask) Commit() error                        { return nil }
func (t *heartbeatTask) Stop() error                          { return nil }

func (t *heartbeatTask) Start(props map[string]string) error {
	f, _, tgt, err := connectorFlow(props)
	if err != nil {
		return err
	}
	t.f = f
	cl, err := tgt.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ensureTopic(ctx, kadm.NewClient(cl), HeartbeatsTopic, 1, f.HeartbeatsReplicationFactor, true); err != nil {
		return connect.Retriable(err)
	}
	return nil
}

func (t *heartbeatTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	if !waitUntil(ctx, t.next) {
		return nil, nil
	}
	now := time.Now()
	t.next = now.Add(max(t.f.EmitHeartbeatsInterval, 100*time.Millisecond))
	h := Heartbeat{Source: t.f.Source, Target: t.f.Target, TimestampMs: now.UnixMilli()}
	zero := int32(0)
	return []connect.SourceRecord{{
		Record:          connect.Record{Topic: HeartbeatsTopic, Partition: &zero, KeySchema: optionalBytes, Key: h.Key(), ValueSchema: optionalBytes, Value: h.Value()},
		SourcePartition: map[string]any{"sourceClusterAlias": h.Source, "targetClusterAlias": h.Target},
		SourceOffset:    map[string]any{"offset": int64(0)},
	}}, nil
}

// waitUntil waits for at, at most a second (Poll's bound), and reports
// whether at was reached.
func waitUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	wait := min(d, time.Second)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
	}
	return wait == d
}
