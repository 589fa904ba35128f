package mirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicSync keeps the target's remote topics in step with the source:
// creation, partition counts, configs and ACLs. Only the goroutine that
// runs refresh uses it after start-up.
type topicSync struct {
	s            *Source
	src, tgt     *kadm.Client
	srcCl, tgtCl *kgo.Client
	// consumed is the partition count consumed per source topic.
	consumed map[string]int
}

func newTopicSync(s *Source, srcCl, tgtCl *kgo.Client) *topicSync {
	return &topicSync{s: s, src: kadm.NewClient(srcCl), tgt: kadm.NewClient(tgtCl), srcCl: srcCl, tgtCl: tgtCl, consumed: map[string]int{}}
}

// refresh lists the source's topics, creates or grows their remote topics,
// and starts consuming new partitions after the stored offsets (the last
// upstream offset copied, as progress gives it) or at the start.
func (t *topicSync) refresh(ctx context.Context, consumer *kgo.Client, progress func(partitionKey) (int64, bool)) error {
	f := t.s.flow
	srcTopics, err := t.src.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing source topics: %w", err)
	}
	var gone []string
	for name := range t.consumed {
		if !srcTopics.Has(name) {
			gone = append(gone, name)
		}
	}
	for _, name := range gone {
		parts := map[string][]int32{name: nil}
		for p := 0; p < t.consumed[name]; p++ {
			parts[name] = append(parts[name], int32(p))
		}
		consumer.RemoveConsumePartitions(parts)
		delete(t.consumed, name)
		t.s.log.Info("topic deleted on the source: no longer mirrored", "topic", name)
	}
	var mirrored []string
	for _, d := range srcTopics.Sorted() {
		if d.Err == nil && f.Mirrored(d.Topic) {
			mirrored = append(mirrored, d.Topic)
		}
	}
	if len(mirrored) == 0 {
		return nil
	}
	remote := map[string]string{}
	var remotes []string
	for _, name := range mirrored {
		r := f.Policy.FormatRemoteTopic(f.Source, name)
		remote[name] = r
		remotes = append(remotes, r)
	}
	tgtTopics, err := t.tgt.ListTopics(ctx, remotes...)
	if err != nil {
		return fmt.Errorf("listing target topics: %w", err)
	}
	var configs kadm.ResourceConfigs
	add := map[string]map[int32]kgo.Offset{}
	for _, name := range mirrored {
		n := len(srcTopics[name].Partitions)
		r := remote[name]
		td, exists := tgtTopics[r]
		if !exists || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			if configs == nil {
				configs, _ = t.src.DescribeTopicConfigs(ctx, mirrored...)
			}
			resp, err := t.tgt.CreateTopic(ctx, int32(n), f.ReplicationFactor, t.copiedConfigs(configs, name), r)
			if err == nil {
				err = resp.Err
			}
			if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				t.s.log.Warn("creating remote topic", "topic", r, "err", err)
				continue
			}
			t.s.log.Info("created remote topic", "topic", r, "partitions", n)
		} else if td.Err != nil {
			continue
		} else if f.PreserveOffsets && t.consumed[name] == 0 {
			ok, err := preserving(ctx, t.tgt, r)
			if err != nil {
				t.s.log.Warn("describing remote topic", "topic", r, "err", err)
				continue
			}
			if !ok {
				t.s.log.Warn("not mirrored: the remote topic exists without "+PreserveOffsetsConfig+"=true, so its offsets cannot be kept", "topic", r)
				continue
			}
		}
		if have := len(td.Partitions); exists && td.Err == nil && have < n {
			if _, err := t.tgt.UpdatePartitions(ctx, n, r); err != nil {
				t.s.log.Warn("adding partitions to remote topic", "topic", r, "err", err)
				continue
			}
			t.tgtCl.ForceMetadataRefresh()
			t.s.log.Info("followed new partitions", "topic", r, "partitions", n)
		}
		for p := t.consumed[name]; p < n; p++ {
			if add[name] == nil {
				add[name] = map[int32]kgo.Offset{}
			}
			if off, ok := progress(partitionKey{name, int32(p)}); ok {
				add[name][int32(p)] = kgo.NewOffset().At(off + 1)
			} else {
				add[name][int32(p)] = kgo.NewOffset().AtStart()
			}
		}
		t.consumed[name] = n
	}
	if len(add) > 0 {
		consumer.AddConsumePartitions(add)
		consumer.ForceMetadataRefresh()
	}
	return nil
}

// copiedConfigs are the topic's configs set on the source (not defaults)
// that config.properties.exclude lets through.
func (t *topicSync) copiedConfigs(configs kadm.ResourceConfigs, topic string) map[string]*string {
	out := map[string]*string{}
	for _, rc := range configs {
		if rc.Name != topic || rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && t.s.flow.ConfigMirrored(c.Key) && c.Value != nil && !c.Sensitive {
				v := *c.Value
				out[c.Key] = &v
			}
		}
	}
	if t.s.flow.PreserveOffsets {
		v := "true"
		out[PreserveOffsetsConfig] = &v
	}
	return out
}

// syncConfigs copies the mirrored topics' configs to their remote topics
// (sync.topic.configs.enabled), with incremental alters of what differs.
func (t *topicSync) syncConfigs(ctx context.Context) {
	f := t.s.flow
	var names []string
	for name := range t.consumed {
		names = append(names, name)
	}
	if len(names) == 0 {
		return
	}
	srcCfgs, err := t.src.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		t.s.log.Warn("describing source topic configs", "err", err)
		return
	}
	for _, name := range names {
		want := t.copiedConfigs(srcCfgs, name)
		r := f.Policy.FormatRemoteTopic(f.Source, name)
		tgtCfgs, err := t.tgt.DescribeTopicConfigs(ctx, r)
		if err != nil {
			continue
		}
		have := map[string]string{}
		for _, rc := range tgtCfgs {
			for _, c := range rc.Configs {
				if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
					have[c.Key] = *c.Value
				}
			}
		}
		var alters []kadm.AlterConfig
		for k, v := range want {
			if cur, ok := have[k]; !ok || cur != *v {
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
			}
		}
		if len(alters) == 0 {
			continue
		}
		resp, err := t.tgt.AlterTopicConfigs(ctx, alters, r)
		if err == nil {
			for _, a := range resp {
				if a.Err != nil {
					err = a.Err
				}
			}
		}
		if err != nil {
			t.s.log.Warn("syncing topic configs", "topic", r, "err", err)
			continue
		}
		t.s.log.Info("synced topic configs", "topic", r, "changed", len(alters))
	}
}

// syncACLs copies the source's ALLOW ACLs on mirrored topics to their
// remote topics (sync.topic.acls.enabled), as Kafka does: WRITE is not
// copied (only MirrorMaker writes remote topics) and ALL becomes READ.
func (t *topicSync) syncACLs(ctx context.Context) {
	f := t.s.flow
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeTopic
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAllow
	resp, err := req.RequestWith(ctx, t.srcCl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if errors.Is(err, kerr.SecurityDisabled) {
		return // no authorizer on the source: nothing to copy
	}
	if err != nil {
		t.s.log.Warn("describing source ACLs", "err", err)
		return
	}
	create := kmsg.NewPtrCreateACLsRequest()
	for _, res := range resp.Resources {
		if res.ResourcePatternType == kmsg.ACLResourcePatternTypeLiteral && res.ResourceName == "*" {
			continue
		}
		if !f.Mirrored(res.ResourceName) && res.ResourcePatternType == kmsg.ACLResourcePatternTypeLiteral {
			continue
		}
		for _, a := range res.ACLs {
			if a.PermissionType != kmsg.ACLPermissionTypeAllow || a.Operation == kmsg.ACLOperationWrite {
				continue
			}
			op := a.Operation
			if op == kmsg.ACLOperationAll {
				op = kmsg.ACLOperationRead
			}
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType = kmsg.ACLResourceTypeTopic
			c.ResourceName = f.Policy.FormatRemoteTopic(f.Source, res.ResourceName)
			c.ResourcePatternType = res.ResourcePatternType
			c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, op, kmsg.ACLPermissionTypeAllow
			create.Creations = append(create.Creations, c)
		}
	}
	if len(create.Creations) == 0 {
		return
	}
	cresp, err := create.RequestWith(ctx, t.tgtCl)
	if err == nil {
		for _, r := range cresp.Results {
			if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
				err = e
			}
		}
	}
	if err != nil {
		t.s.log.Warn("creating target ACLs", "err", err)
	}
}
