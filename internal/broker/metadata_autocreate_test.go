package broker_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataAutoCreateConcurrent has many connections ask, at once, for
// the same and for different missing topics: each name is created once
// (nobody sees TOPIC_ALREADY_EXISTS or a half-created topic), and every
// request is answered with the topic and its partitions.
func TestMetadataAutoCreateConcurrent(t *testing.T) {
	tn := startNode(t, map[string]string{"auto.create.topics.enable": "true", "num.partitions": "2"})
	const names, perName = 8, 4
	var wg sync.WaitGroup
	ids := make([]map[[16]byte]bool, names)
	var mu sync.Mutex
	for n := range names {
		ids[n] = map[[16]byte]bool{}
		for range perName {
			c := tn.dial()
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("concurrent-%d", n)
				req := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
				req.AllowAutoTopicCreation = true
				req.SetVersion(12)
				got, err := c.recv(req, c.send(req), 30*time.Second)
				if err != nil {
					t.Errorf("metadata for %s: %v", name, err)
					return
				}
				mt := got.(*kmsg.MetadataResponse).Topics[0]
				if mt.ErrorCode != 0 || len(mt.Partitions) != 2 {
					t.Errorf("metadata for %s: error %d, %d partitions", name, mt.ErrorCode, len(mt.Partitions))
					return
				}
				mu.Lock()
				ids[n][mt.TopicID] = true
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for n, seen := range ids {
		if len(seen) > 1 {
			t.Errorf("concurrent-%d answered with %d topic ids: created more than once", n, len(seen))
		}
	}
}
