package broker

// Metadata (key 3), v0-v12.
//
// Brokers are listed with their endpoint for the listener the request came
// in on. A null topic list (v1+; an empty one at v0) asks for every topic.
// Topics are looked up by name, or by id from v10 (KIP-516; an unknown id is
// UNKNOWN_TOPIC_ID). A missing topic is created with the broker's defaults
// when auto.create.topics.enable is set and the request allows it
// (allow_auto_topic_creation, v4+; always allowed before), unless the name is
// invalid (INVALID_TOPIC_EXCEPTION) or internal. Creation is synchronous, so
// the new topic is returned with its partitions at once. With an
// authorizer (Kafka's rules): a principal sees only the topics it may
// DESCRIBE; a named topic it may not is TOPIC_AUTHORIZATION_FAILED whether
// or not it exists, and auto-creation needs CREATE on the cluster or the
// topic. Authorized operations (v8+) are filled when asked for, from the
// ACLs (without an authorizer, every operation).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.Metadata, 0, 12, (*Broker).handleMetadata) }

// authorizedOpsOmitted is an authorized-operations field not asked for
// (KIP-430: INT32_MIN).
const authorizedOpsOmitted = -2147483648

func (b *Broker) handleMetadata(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := b.meta.Image()

	resp.Brokers = b.brokerEndpoints(img, r.Conn.Listener)
	clusterID := b.currentClusterID(img)
	resp.ClusterID = &clusterID
	resp.ControllerID = b.controllerID(img)
	resp.AuthorizedOperations = authorizedOpsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.authorizedOps(r, acl.ResourceCluster, acl.ClusterName)
	}

	allTopics := req.Topics == nil || (r.Version == 0 && len(req.Topics) == 0)
	if allTopics {
		// Kafka lists only the topics the principal may DESCRIBE.
		for _, t := range img.Topics() {
			if b.allowedTopic(r, t.Name, acl.OpDescribe) {
				resp.Topics = append(resp.Topics, b.topicMetadata(r, img, t, req.IncludeTopicAuthorizedOperations))
			}
		}
		return resp, nil
	}

	allowAuto := r.Version < 4 || req.AllowAutoTopicCreation
	for _, rt := range req.Topics {
		var t *metadata.TopicImage
		var ok bool
		switch {
		case rt.Topic != nil && !b.allowedTopic(r, *rt.Topic, acl.OpDescribe):
			// Kafka: TOPIC_AUTHORIZATION_FAILED whether or not it exists.
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		case rt.Topic != nil:
			t, ok = img.Topic(*rt.Topic)
			if !ok && allowAuto && b.cfg.AutoCreateTopicsEnable && !b.mayCreateTopic(r, *rt.Topic) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = rt.Topic
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			if !ok && allowAuto && b.cfg.AutoCreateTopicsEnable {
				var err error
				t, err = b.autoCreateTopic(ctx, *rt.Topic)
				if err != nil {
					mt := kmsg.NewMetadataResponseTopic()
					mt.Topic = rt.Topic
					mt.ErrorCode = b.errCode(err)
					resp.Topics = append(resp.Topics, mt)
					continue
				}
				ok = true
			}
		case rt.TopicID != [16]byte{}:
			t, ok = img.TopicByID(metadata.Uuid(rt.TopicID))
			if ok && !b.allowedTopic(r, t.Name, acl.OpDescribe) {
				// The name is not revealed to a principal that may not
				// DESCRIBE the topic.
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if rt.Topic == nil {
				mt.ErrorCode = kerr.UnknownTopicID.Code
			} else if metadata.ValidateTopicName(*rt.Topic) != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.topicMetadata(r, img, t, req.IncludeTopicAuthorizedOperations))
	}
	return resp, nil
}

// mayCreateTopic is Kafka's check for creating a topic: CREATE on the
// cluster, or on the topic.
func (b *Broker) mayCreateTopic(r *server.Request, name string) bool {
	return b.allowedCluster(r, acl.OpCreate) || b.allowedTopic(r, name, acl.OpCreate)
}

// autoCreateTopic creates a topic a client asked for, with the broker's
// default partition count and replication factor. Internal topic names are
// never auto-created here; their coordinators create them.
//
// Concurrent requests for one missing name share one creation (a
// singleflight per name); no lock is held across the controller call, so
// requests for other names, or for topics that exist, never wait on it.
// The shared creation is not tied to the first caller's connection: it runs
// for at most request.timeout.ms, as the forwarded CreateTopics would, and
// each caller stops waiting when its own request ends.
func (b *Broker) autoCreateTopic(ctx context.Context, name string) (*metadata.TopicImage, error) {
	if err := metadata.ValidateTopicName(name); err != nil {
		return nil, err
	}
	if metadata.IsInternalTopic(name) {
		return nil, kerr.UnknownTopicOrPartition
	}
	if t, ok := b.meta.Image().Topic(name); ok {
		return t, nil
	}
	done := b.autoCreates.DoChan(name, func() (any, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(b.cfg.RequestTimeoutMs)*time.Millisecond)
		defer cancel()
		return b.createTopicNow(cctx, name)
	})
	select {
	case r := <-done:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*metadata.TopicImage), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for topic %s to be created: %v", kerr.RequestTimedOut, name, ctx.Err())
	}
}

// createTopicNow is one auto-creation: the topic, then the local image and
// partitions reflecting it.
func (b *Broker) createTopicNow(ctx context.Context, name string) (*metadata.TopicImage, error) {
	if t, ok := b.meta.Image().Topic(name); ok {
		return t, nil
	}
	res := b.createTopics(ctx, []rules.CreateTopic{{Name: name, NumPartitions: -1, ReplicationFactor: -1}})
	if err := res[0].Err; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return nil, err
	}
	b.awaitMetadata(ctx)
	b.log.Info("auto-created topic", "topic", name, "partitions", res[0].NumPartitions)
	t, ok := b.meta.Image().Topic(name)
	if !ok {
		return nil, kerr.LeaderNotAvailable
	}
	return t, nil
}

func (b *Broker) topicMetadata(r *server.Request, img *metadata.Image, t *metadata.TopicImage, withOps bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = t.IsInternal
	mt.AuthorizedOperations = authorizedOpsOmitted
	if withOps {
		mt.AuthorizedOperations = b.authorizedOps(r, acl.ResourceTopic, t.Name)
	}
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Partition
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = slices.Clone(p.Replicas)
		mp.ISR = slices.Clone(p.ISR)
		mp.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			if br, ok := img.Broker(r); !ok || br.Fenced {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if p.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// brokerEndpoints lists the registered, unfenced brokers with their
// endpoint for the named listener.
func (b *Broker) brokerEndpoints(img *metadata.Image, listener string) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, br := range img.Brokers() {
		if br.Fenced {
			continue
		}
		for _, ep := range br.Endpoints {
			if ep.Name != listener {
				continue
			}
			mb := kmsg.NewMetadataResponseBroker()
			mb.NodeID = br.ID
			mb.Host = ep.Host
			mb.Port = ep.Port
			if br.Rack != "" {
				rack := br.Rack
				mb.Rack = &rack
			}
			out = append(out, mb)
		}
	}
	return out
}
