package broker_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/broker"
)

func TestApiVersions(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()

	t.Run("table matches the registrations", func(t *testing.T) {
		resp := do[*kmsg.ApiVersionsResponse](c, 3, &kmsg.ApiVersionsRequest{ClientSoftwareName: "vltava-test", ClientSoftwareVersion: "1.0"})
		if resp.ErrorCode != 0 {
			t.Fatalf("error %d", resp.ErrorCode)
		}
		var b *broker.Broker // VersionRange reads only the registry
		var want []kmsg.ApiVersionsResponseApiKey
		for k := int16(0); k <= kmsg.MaxKey; k++ {
			if k == int16(kmsg.GetTelemetrySubscriptions) || k == int16(kmsg.PushTelemetry) {
				continue // advertised only with telemetry.enable (test/compat/telemetry_test.go)
			}
			if lo, hi, ok := b.VersionRange(k); ok {
				want = append(want, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: lo, MaxVersion: hi})
			}
		}
		if len(resp.ApiKeys) != len(want) {
			t.Fatalf("%d APIs advertised, %d registered", len(resp.ApiKeys), len(want))
		}
		for i, k := range resp.ApiKeys {
			w := want[i]
			if k.ApiKey != w.ApiKey || k.MinVersion != w.MinVersion || k.MaxVersion != w.MaxVersion {
				t.Errorf("entry %d: %d v%d-v%d, want %d v%d-v%d", i, k.ApiKey, k.MinVersion, k.MaxVersion, w.ApiKey, w.MinVersion, w.MaxVersion)
			}
			if k.MaxVersion > kmsg.RequestForKey(k.ApiKey).MaxVersion() {
				t.Errorf("%s advertised beyond what kmsg decodes", kmsg.NameForKey(k.ApiKey))
			}
		}
		for _, key := range []kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.Produce, kmsg.Fetch} {
			if !slices.ContainsFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == int16(key) }) {
				t.Errorf("%s not advertised", key.Name())
			}
		}
	})

	tests := []struct {
		name, software, version string
		v                       int16
		want                    int16
	}{
		{"v0 has no software fields", "", "", 0, 0},
		{"v3 valid", "franz-go", "1.18.0", 3, 0},
		{"v3 name with a space", "franz go", "1.0", 3, kerr.InvalidRequest.Code},
		{"v3 empty name", "", "1.0", 3, kerr.InvalidRequest.Code},
		{"v3 version ending in a dot", "kgo", "1.0.", 3, kerr.InvalidRequest.Code},
		{"v4 invalid name", "bad/name", "1", 4, kerr.InvalidRequest.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do[*kmsg.ApiVersionsResponse](c, tt.v, &kmsg.ApiVersionsRequest{ClientSoftwareName: tt.software, ClientSoftwareVersion: tt.version})
			if resp.ErrorCode != tt.want {
				t.Errorf("error %d, want %d", resp.ErrorCode, tt.want)
			}
			if len(resp.ApiKeys) == 0 {
				t.Error("no API table sent")
			}
		})
	}
}

func metadataReq(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, n := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func topicNames(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out = append(out, *t.Topic)
		}
	}
	slices.Sort(out)
	return out
}

func TestMetadataTopicLists(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "a", 2, nil)
	createTopic(c, "b", 1, nil)

	nullList := metadataReq()
	nullList.Topics = nil
	tests := []struct {
		name string
		v    int16
		req  *kmsg.MetadataRequest
		want []string
	}{
		{"v0 empty list is every topic", 0, metadataReq(), []string{"a", "b"}},
		{"v1 null list is every topic", 1, nullList, []string{"a", "b"}},
		{"v1 empty list is no topic", 1, metadataReq(), nil},
		{"v12 null list is every topic", 12, nullList, []string{"a", "b"}},
		{"v12 empty list is no topic", 12, metadataReq(), nil},
		{"v12 one topic", 12, metadataReq("b"), []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do[*kmsg.MetadataResponse](c, tt.v, tt.req)
			if got := topicNames(resp); !slices.Equal(got, tt.want) {
				t.Errorf("topics %v, want %v", got, tt.want)
			}
			if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 {
				t.Errorf("brokers %+v, want node 1", resp.Brokers)
			}
			for _, mt := range resp.Topics {
				if mt.ErrorCode != 0 {
					t.Errorf("topic %v: error %d", *mt.Topic, mt.ErrorCode)
				}
				for _, p := range mt.Partitions {
					if p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) {
						t.Errorf("%s-%d: leader %d isr %v", *mt.Topic, p.Partition, p.Leader, p.ISR)
					}
				}
			}
		})
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	tests := []struct {
		name       string
		enabled    bool
		v          int16
		allow      bool
		topic      string
		wantErr    int16
		wantCreate bool
	}{
		{"enabled, v12 allowed", true, 12, true, "auto1", 0, true},
		{"enabled, v12 disallowed by request", true, 12, false, "auto2", kerr.UnknownTopicOrPartition.Code, false},
		{"enabled, v3 always allowed", true, 3, false, "auto3", 0, true},
		{"disabled", false, 12, true, "auto4", kerr.UnknownTopicOrPartition.Code, false},
		{"enabled, invalid name", true, 12, true, "bad name!", kerr.InvalidTopicException.Code, false},
		{"disabled, invalid name", false, 12, true, "bad name!", kerr.InvalidTopicException.Code, false},
		{"enabled, name too long", true, 12, true, string(make([]byte, 250)), kerr.InvalidTopicException.Code, false},
	}
	nodes := map[bool]*conn{
		true:  startNode(t, map[string]string{"auto.create.topics.enable": "true", "num.partitions": "3"}).dial(),
		false: startNode(t, map[string]string{"auto.create.topics.enable": "false", "num.partitions": "3"}).dial(),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := nodes[tt.enabled]
			req := metadataReq(tt.topic)
			req.AllowAutoTopicCreation = tt.allow
			resp := do[*kmsg.MetadataResponse](c, tt.v, req)
			if len(resp.Topics) != 1 {
				t.Fatalf("%d topics in response", len(resp.Topics))
			}
			mt := resp.Topics[0]
			if mt.ErrorCode != tt.wantErr {
				t.Errorf("error %d, want %d", mt.ErrorCode, tt.wantErr)
			}
			if tt.wantCreate && len(mt.Partitions) != 3 {
				t.Errorf("%d partitions, want num.partitions=3", len(mt.Partitions))
			}
			all := metadataReq()
			all.Topics = nil
			created := slices.Contains(topicNames(do[*kmsg.MetadataResponse](c, 12, all)), tt.topic)
			if created != tt.wantCreate {
				t.Errorf("topic exists afterwards: %v, want %v", created, tt.wantCreate)
			}
		})
	}
}

func TestMetadataByTopicID(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	id := createTopic(c, "by-id", 1, nil)
	if id == [16]byte{} {
		t.Fatal("CreateTopics v7 returned no topic id")
	}

	req := kmsg.NewPtrMetadataRequest()
	known := kmsg.NewMetadataRequestTopic()
	known.TopicID = id
	unknown := kmsg.NewMetadataRequestTopic()
	unknown.TopicID = [16]byte{1, 2, 3}
	req.Topics = []kmsg.MetadataRequestTopic{known, unknown}
	resp := do[*kmsg.MetadataResponse](c, 12, req)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics", len(resp.Topics))
	}
	if got := resp.Topics[0]; got.ErrorCode != 0 || got.Topic == nil || *got.Topic != "by-id" || got.TopicID != id {
		t.Errorf("by id: error %d name %v id %x", got.ErrorCode, got.Topic, got.TopicID)
	}
	if got := resp.Topics[1]; got.ErrorCode != kerr.UnknownTopicID.Code || got.TopicID != unknown.TopicID {
		t.Errorf("unknown id: error %d id %x, want UNKNOWN_TOPIC_ID", got.ErrorCode, got.TopicID)
	}
}

func TestMetadataAuthorizedOperations(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "ops", 1, nil)
	const omitted = -2147483648
	const (
		read, write, describe, alterConfigs = 1 << 3, 1 << 4, 1 << 8, 1 << 11
		clusterCreate, idempotentWrite      = 1 << 5, 1 << 12
	)
	tests := []struct {
		name            string
		topicOps, clOps bool
		v               int16
		wantTopicSet    bool
		wantClusterSet  bool
	}{
		{"none asked", false, false, 10, false, false},
		{"topic ops", true, false, 10, true, false},
		{"cluster ops (v8-v10)", false, true, 10, false, true},
		{"v11 has no cluster field", false, false, 11, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := metadataReq("ops")
			req.IncludeTopicAuthorizedOperations = tt.topicOps
			req.IncludeClusterAuthorizedOperations = tt.clOps
			resp := do[*kmsg.MetadataResponse](c, tt.v, req)
			ops := resp.Topics[0].AuthorizedOperations
			if tt.wantTopicSet {
				for _, bit := range []int32{read, write, describe, alterConfigs} {
					if ops&bit == 0 {
						t.Errorf("topic ops %b lacks bit %b", ops, bit)
					}
				}
			} else if ops != omitted {
				t.Errorf("topic ops %d, want omitted", ops)
			}
			if tt.wantClusterSet {
				if resp.AuthorizedOperations&(clusterCreate|idempotentWrite) != clusterCreate|idempotentWrite {
					t.Errorf("cluster ops %b lack CREATE and IDEMPOTENT_WRITE", resp.AuthorizedOperations)
				}
			} else if tt.v <= 10 && resp.AuthorizedOperations != omitted {
				t.Errorf("cluster ops %d, want omitted", resp.AuthorizedOperations)
			}
		})
	}
}
