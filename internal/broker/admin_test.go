package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCreateTopics(t *testing.T) {
	tn := startNode(t, map[string]string{"num.partitions": "4"})
	c := tn.dial()
	createTopic(c, "exists", 1, nil)

	topic := func(name string, parts int32, rf int16, cfg map[string]string) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for k, v := range cfg {
			cc := kmsg.NewCreateTopicsRequestTopicConfig()
			cc.Name, cc.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, cc)
		}
		return rt
	}
	tests := []struct {
		name         string
		v            int16
		validateOnly bool
		topic        kmsg.CreateTopicsRequestTopic
		want         int16
		wantParts    int32
		wantCreated  bool
	}{
		{"defaults -1/-1", 7, false, topic("d", -1, -1, nil), 0, 4, true},
		{"explicit", 7, false, topic("e", 2, 1, nil), 0, 2, true},
		{"validate only creates nothing", 7, true, topic("v", 3, 1, nil), 0, 3, false},
		{"already exists", 7, false, topic("exists", 1, 1, nil), kerr.TopicAlreadyExists.Code, -1, true},
		{"invalid name", 7, false, topic("bad/name", 1, 1, nil), kerr.InvalidTopicException.Code, -1, false},
		{"zero partitions", 7, false, topic("z", 0, 1, nil), kerr.InvalidPartitions.Code, -1, false},
		{"replication factor above brokers", 7, false, topic("rf", 1, 3, nil), kerr.InvalidReplicationFactor.Code, -1, false},
		{"unknown config", 7, false, topic("uc", 1, 1, map[string]string{"no.such.config": "1"}), kerr.InvalidConfig.Code, -1, false},
		{"invalid config value", 7, false, topic("ic", 1, 1, map[string]string{"cleanup.policy": "sometimes"}), kerr.InvalidConfig.Code, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.ValidateOnly = tt.validateOnly
			req.TimeoutMillis = 5000
			req.Topics = append(req.Topics, tt.topic)
			st := do[*kmsg.CreateTopicsResponse](c, tt.v, req).Topics[0]
			if st.ErrorCode != tt.want {
				t.Fatalf("error %d (%v), want %d", st.ErrorCode, st.ErrorMessage, tt.want)
			}
			if st.NumPartitions != tt.wantParts {
				t.Errorf("partitions %d, want %d", st.NumPartitions, tt.wantParts)
			}
			md := do[*kmsg.MetadataResponse](c, 12, metadataReq(tt.topic.Topic))
			if exists := md.Topics[0].ErrorCode == 0; exists != tt.wantCreated {
				t.Errorf("topic exists: %v, want %v", exists, tt.wantCreated)
			}
		})
	}

	t.Run("v5+ returns the configs, v4 does not", func(t *testing.T) {
		for _, v := range []int16{4, 5} {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Topics = append(req.Topics, topic("cfg-v"+string(rune('0'+v)), 1, 1, map[string]string{"retention.ms": "1234"}))
			st := do[*kmsg.CreateTopicsResponse](c, v, req).Topics[0]
			if st.ErrorCode != 0 {
				t.Fatalf("v%d: error %d", v, st.ErrorCode)
			}
			var retention *string
			for _, cc := range st.Configs {
				if cc.Name == "retention.ms" {
					retention = cc.Value
				}
			}
			switch {
			case v < 5 && len(st.Configs) != 0:
				t.Errorf("v%d: %d configs returned", v, len(st.Configs))
			case v >= 5 && (retention == nil || *retention != "1234"):
				t.Errorf("v%d: retention.ms %v, want 1234", v, retention)
			}
		}
	})
}

func TestDeleteTopics(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "byname", 1, nil)
	id := createTopic(c, "byid", 1, nil)

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 5000
	req.TopicNames = []string{"byname", "nope"}
	resp := do[*kmsg.DeleteTopicsResponse](c, 5, req)
	if got := resp.Topics[0].ErrorCode; got != 0 {
		t.Errorf("by name: error %d", got)
	}
	if got := resp.Topics[1].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown name: error %d", got)
	}

	req = kmsg.NewPtrDeleteTopicsRequest()
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = id
	unknown := kmsg.NewDeleteTopicsRequestTopic()
	unknown.TopicID = [16]byte{7}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID, unknown}
	resp = do[*kmsg.DeleteTopicsResponse](c, 6, req)
	if got := resp.Topics[0]; got.ErrorCode != 0 || got.Topic == nil || *got.Topic != "byid" {
		t.Errorf("by id: error %d name %v", got.ErrorCode, got.Topic)
	}
	if got := resp.Topics[1].ErrorCode; got != kerr.UnknownTopicID.Code {
		t.Errorf("unknown id: error %d, want UNKNOWN_TOPIC_ID", got)
	}
	all := metadataReq()
	all.Topics = nil
	if names := topicNames(do[*kmsg.MetadataResponse](c, 12, all)); len(names) != 0 {
		t.Errorf("topics left: %v", names)
	}

	off := startNode(t, map[string]string{"delete.topic.enable": "false"}).dial()
	createTopic(off, "keep", 1, nil)
	req = kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"keep"}
	if got := do[*kmsg.DeleteTopicsResponse](off, 5, req).Topics[0].ErrorCode; got != kerr.TopicDeletionDisabled.Code {
		t.Errorf("delete.topic.enable=false: error %d", got)
	}
}

func TestCreatePartitions(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "cp", 2, nil)
	tests := []struct {
		name         string
		topic        string
		count        int32
		validateOnly bool
		want         int16
		wantParts    int
	}{
		{"validate only", "cp", 5, true, 0, 2},
		{"grow", "cp", 3, false, 0, 3},
		{"same count", "cp", 3, false, kerr.InvalidPartitions.Code, 3},
		{"shrink", "cp", 1, false, kerr.InvalidPartitions.Code, 3},
		{"unknown topic", "nope", 3, false, kerr.UnknownTopicOrPartition.Code, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.ValidateOnly = tt.validateOnly
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = tt.topic, tt.count
			req.Topics = append(req.Topics, rt)
			if got := do[*kmsg.CreatePartitionsResponse](c, 3, req).Topics[0].ErrorCode; got != tt.want {
				t.Fatalf("error %d, want %d", got, tt.want)
			}
			if tt.wantParts > 0 {
				md := do[*kmsg.MetadataResponse](c, 12, metadataReq(tt.topic))
				if n := len(md.Topics[0].Partitions); n != tt.wantParts {
					t.Errorf("%d partitions, want %d", n, tt.wantParts)
				}
			}
		})
	}
	if off := produce(c, "cp", 2, "to the new partition"); off != 0 {
		t.Errorf("produce to the new partition: offset %d", off)
	}
}

func TestDeleteRecords(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "dr", 1, nil)
	produce(c, "dr", 0, "a", "b", "c", "d", "e")
	tests := []struct {
		name    string
		offset  int64
		want    int16
		wantLow int64
	}{
		{"to 2", 2, 0, 2},
		{"backwards is a no-op", 1, 0, 2},
		{"beyond the high watermark", 6, kerr.OffsetOutOfRange.Code, -1},
		{"negative other than -1", -2, kerr.OffsetOutOfRange.Code, -1},
		{"-1 is the high watermark", -1, 0, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "dr"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = tt.offset
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			p := do[*kmsg.DeleteRecordsResponse](c, 2, req).Topics[0].Partitions[0]
			if p.ErrorCode != tt.want || p.LowWatermark != tt.wantLow {
				t.Errorf("error %d low watermark %d, want %d %d", p.ErrorCode, p.LowWatermark, tt.want, tt.wantLow)
			}
		})
	}
	if lo := listOffsets(c, 8, "dr", 0, -2, -1); lo.Offset != 5 {
		t.Errorf("earliest after deleting to the high watermark: %d", lo.Offset)
	}
}

func TestInitProducerID(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	var last int64 = -1
	for i := range 5 {
		resp := do[*kmsg.InitProducerIDResponse](c, int16(i%6), kmsg.NewPtrInitProducerIDRequest())
		if resp.ErrorCode != 0 || resp.ProducerEpoch != 0 {
			t.Fatalf("error %d epoch %d", resp.ErrorCode, resp.ProducerEpoch)
		}
		if resp.ProducerID <= last {
			t.Errorf("producer id %d after %d: want unique, increasing ids", resp.ProducerID, last)
		}
		last = resp.ProducerID
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr("txn")
	req.TransactionTimeoutMillis = 60000
	resp := do[*kmsg.InitProducerIDResponse](c, 5, req)
	if resp.ErrorCode == 0 || resp.ProducerID != -1 {
		t.Errorf("transactional id: error %d producer id %d, want an error and -1", resp.ErrorCode, resp.ProducerID)
	}
}

func TestDescribeCluster(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	resp := do[*kmsg.DescribeClusterResponse](c, 1, &kmsg.DescribeClusterRequest{EndpointType: 1})
	if resp.ErrorCode != 0 || resp.ClusterID != tn.n.ClusterID() || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 {
		t.Errorf("error %d cluster %q brokers %+v", resp.ErrorCode, resp.ClusterID, resp.Brokers)
	}
	resp = do[*kmsg.DescribeClusterResponse](c, 1, &kmsg.DescribeClusterRequest{EndpointType: 2})
	if resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Errorf("endpoint type 2: error %d, want UNSUPPORTED_ENDPOINT_TYPE", resp.ErrorCode)
	}
}

func TestDescribeLogDirs(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "ld", 1, nil)
	size := func() int64 {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = "ld", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := do[*kmsg.DescribeLogDirsResponse](c, 4, req)
		if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 1 {
			t.Fatalf("dirs %+v", resp.Dirs)
		}
		if resp.Dirs[0].TotalBytes <= 0 || resp.Dirs[0].UsableBytes < 0 {
			t.Errorf("total %d usable %d", resp.Dirs[0].TotalBytes, resp.Dirs[0].UsableBytes)
		}
		return resp.Dirs[0].Topics[0].Partitions[0].Size
	}
	before := size()
	produce(c, "ld", 0, string(make([]byte, 1000)))
	if after := size(); after < before+1000 {
		t.Errorf("size %d after a 1000-byte record, %d before", after, before)
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "ofle", 1, nil)
	produce(c, "ofle", 0, "a", "b", "c")
	tests := []struct {
		name           string
		epoch, current int32
		want           int16
		wantEpoch      int32
		wantEnd        int64
	}{
		{"latest epoch ends at the log end", 0, -1, 0, 0, 3},
		{"epoch above the latest is undefined", 4, -1, 0, -1, -1},
		{"current epoch newer than the leader's", 0, 2, kerr.UnknownLeaderEpoch.Code, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "ofle"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.LeaderEpoch, rp.CurrentLeaderEpoch = tt.epoch, tt.current
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			p := do[*kmsg.OffsetForLeaderEpochResponse](c, 4, req).Topics[0].Partitions[0]
			if p.ErrorCode != tt.want || p.LeaderEpoch != tt.wantEpoch || p.EndOffset != tt.wantEnd {
				t.Errorf("error %d epoch %d end %d, want %d %d %d", p.ErrorCode, p.LeaderEpoch, p.EndOffset, tt.want, tt.wantEpoch, tt.wantEnd)
			}
		})
	}
}
