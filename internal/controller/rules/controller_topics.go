package rules

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// MaxPartitionsPerTopicCreate bounds the partitions one CreateTopics or
// CreatePartitions entry may ask for, so one request cannot make the
// controller build an arbitrarily large batch (Kafka bounds records per
// controller operation for the same reason).
const MaxPartitionsPerTopicCreate = 100_000

// CreateTopic is one topic of a CreateTopics request. NumPartitions and
// ReplicationFactor are -1 to use the defaults, and must be -1 when
// Assignment (partition -> replicas) is given.
type CreateTopic struct {
	Name              string
	NumPartitions     int32
	ReplicationFactor int16
	Assignment        map[int32][]int32
	Configs           map[string]*string
}

// CreateTopicResult is the outcome for one topic, in request order. Err is
// nil or wraps a *kerr.Error.
type CreateTopicResult struct {
	Name              string
	TopicID           metadata.Uuid
	NumPartitions     int32
	ReplicationFactor int16
	Configs           map[string]string
	Err               error
}

// CreateTopics validates and creates topics with Kafka's rules. All topics
// that pass validation are committed in one batch; with validateOnly nothing
// is committed but results are computed as if it were.
func (c *Controller) CreateTopics(ctx context.Context, topics []CreateTopic, validateOnly bool) []CreateTopicResult {
	results := make([]CreateTopicResult, len(topics))
	counts := occurrences(topics, func(t CreateTopic) string { return t.Name })
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	live := c.liveBrokersLocked(img)
	// Names created earlier in this request also collide (Kafka checks the
	// request's topics against each other too).
	created := map[string]string{} // unified name -> name
	var recs []metadata.Record
	var ok []int
	for i, t := range topics {
		results[i].Name = t.Name
		if counts[t.Name] > 1 {
			results[i].Err = errDuplicateTopicName
			continue
		}
		topicRecs, res, err := c.planTopicLocked(img, live, created, t)
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i] = res
		created[metadata.UnifyCollisionChars(t.Name)] = t.Name
		recs = append(recs, topicRecs...)
		ok = append(ok, i)
	}
	if validateOnly || len(recs) == 0 {
		return results
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		for _, i := range ok {
			results[i].Err = err
			results[i].TopicID = metadata.ZeroUuid
		}
		return results
	}
	for _, i := range ok {
		c.logger.Info("created topic", "topic", results[i].Name, "id", results[i].TopicID, "partitions", results[i].NumPartitions)
	}
	return results
}

// planTopicLocked validates one topic and returns its records.
func (c *Controller) planTopicLocked(img *metadata.Image, live []int32, created map[string]string, t CreateTopic) ([]metadata.Record, CreateTopicResult, error) {
	res := CreateTopicResult{Name: t.Name}
	if err := metadata.ValidateTopicName(t.Name); err != nil {
		return nil, res, err
	}
	if _, exists := img.Topic(t.Name); exists {
		return nil, res, fmt.Errorf("%w: Topic '%s' already exists.", kerr.TopicAlreadyExists, t.Name)
	}
	if other, collides := c.collisionLocked(img, created, t.Name); collides {
		return nil, res, fmt.Errorf("%w: Topic '%s' collides with existing topic: %s", kerr.InvalidTopicException, t.Name, other)
	}
	var assignment [][]int32
	if len(t.Assignment) > 0 {
		if t.NumPartitions != -1 {
			return nil, res, fmt.Errorf("%w: A manual partition assignment was specified, but numPartitions was not set to -1.", kerr.InvalidRequest)
		}
		if t.ReplicationFactor != -1 {
			return nil, res, fmt.Errorf("%w: A manual partition assignment was specified, but replicationFactor was not set to -1.", kerr.InvalidRequest)
		}
		var err error
		if assignment, err = manualAssignment(t.Assignment, live); err != nil {
			return nil, res, err
		}
	} else {
		n, rf := t.NumPartitions, t.ReplicationFactor
		if n == -1 {
			n = c.cfg.DefaultNumPartitions
		}
		if rf == -1 {
			rf = c.cfg.DefaultReplicationFactor
		}
		if n <= 0 {
			return nil, res, fmt.Errorf("%w: Number of partitions was set to an invalid non-positive value.", kerr.InvalidPartitions)
		}
		if n > MaxPartitionsPerTopicCreate {
			return nil, res, fmt.Errorf("%w: Number of partitions %d exceeds the limit of %d per request.", kerr.InvalidPartitions, n, MaxPartitionsPerTopicCreate)
		}
		if rf <= 0 {
			return nil, res, fmt.Errorf("%w: Replication factor must be larger than 0, or -1 to use the default value.", kerr.InvalidReplicationFactor)
		}
		if int(rf) > len(live) {
			return nil, res, fmt.Errorf("%w: Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
				kerr.InvalidReplicationFactor, rf, rf, len(live))
		}
		assignment = placeReplicas(live, rackLookup(img), 0, n, int(rf), c.mu.rng)
	}
	configs, err := c.topicConfigs(t.Configs)
	if err != nil {
		return nil, res, err
	}

	id := metadata.NewUuid()
	for _, exists := img.TopicByID(id); exists; _, exists = img.TopicByID(id) {
		id = metadata.NewUuid()
	}
	recs := make([]metadata.Record, 0, 1+len(configs)+len(assignment))
	recs = append(recs, &metadata.TopicRecord{Name: t.Name, TopicID: id})
	recs = metadata.AppendConfigRecords(recs, metadata.ConfigResourceTopic, t.Name, configs)
	for p, replicas := range assignment {
		recs = append(recs, &metadata.PartitionRecord{
			TopicID: id, Partition: int32(p), Replicas: replicas, ISR: slices.Clone(replicas),
			Leader: replicas[0], LeaderEpoch: 0, PartitionEpoch: 0,
		})
	}
	res.TopicID = id
	res.NumPartitions = int32(len(assignment))
	res.ReplicationFactor = int16(len(assignment[0]))
	res.Configs = configs
	return recs, res, nil
}

// collisionLocked finds an existing (or earlier in this request) topic whose
// name differs from name only by '.' versus '_'.
func (c *Controller) collisionLocked(img *metadata.Image, created map[string]string, name string) (string, bool) {
	unified := metadata.UnifyCollisionChars(name)
	if other, ok := created[unified]; ok {
		return other, true
	}
	if !strings.ContainsAny(name, "._") {
		return "", false
	}
	// A topic colliding with name has the same length and the same
	// characters except at '.'/'_' positions; checking every variant would
	// be exponential, so scan (creates are rare; the image is in memory).
	for _, t := range img.Topics() {
		if len(t.Name) == len(name) && t.Name != name && metadata.UnifyCollisionChars(t.Name) == unified {
			return t.Name, true
		}
	}
	return "", false
}

// topicConfigs turns requested configs into the stored override map and
// validates it.
func (c *Controller) topicConfigs(req map[string]*string) (map[string]string, error) {
	cfg := make(map[string]string, len(req))
	var nulls []string
	for k, v := range req {
		if v == nil {
			nulls = append(nulls, k)
			continue
		}
		cfg[k] = *v
	}
	if len(nulls) > 0 {
		slices.Sort(nulls)
		return nil, fmt.Errorf("%w: Null value not supported for topic configs: %s", kerr.InvalidConfig, strings.Join(nulls, ","))
	}
	if err := c.validateTopicConfigs(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// manualAssignment checks a CreateTopics replica assignment as Kafka's
// ReplicationControlManager does and returns it as a dense slice.
func manualAssignment(req map[int32][]int32, live []int32) ([][]int32, error) {
	n := int32(len(req))
	if n > MaxPartitionsPerTopicCreate {
		return nil, fmt.Errorf("%w: Number of partitions %d exceeds the limit of %d per request.", kerr.InvalidPartitions, n, MaxPartitionsPerTopicCreate)
	}
	out := make([][]int32, n)
	for _, p := range slices.Sorted(maps.Keys(req)) {
		if p < 0 || p >= n {
			return nil, fmt.Errorf("%w: Partitions should be numbered 0 to %d, but partition %d was specified.", kerr.InvalidReplicaAssignment, n-1, p)
		}
		out[p] = req[p]
	}
	if err := checkReplicaLists(out, len(out[0]), live); err != nil {
		return nil, err
	}
	return out, nil
}

// checkReplicaLists checks manually assigned replica lists: non-empty, no
// broker twice, every broker live, and all the same length rf.
func checkReplicaLists(lists [][]int32, rf int, live []int32) error {
	for _, replicas := range lists {
		if len(replicas) == 0 {
			return fmt.Errorf("%w: The manual partition assignment includes an empty replica list.", kerr.InvalidReplicaAssignment)
		}
		seen := map[int32]bool{}
		for _, b := range replicas {
			if seen[b] {
				return fmt.Errorf("%w: The manual partition assignment includes the broker %d more than once.", kerr.InvalidReplicaAssignment, b)
			}
			seen[b] = true
			if _, found := slices.BinarySearch(live, b); !found {
				return fmt.Errorf("%w: The manual partition assignment includes broker %d, but no such broker is registered.", kerr.InvalidReplicaAssignment, b)
			}
		}
		if len(replicas) != rf {
			return fmt.Errorf("%w: The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).",
				kerr.InvalidReplicaAssignment, len(replicas), rf)
		}
	}
	return nil
}

// DeleteTopicResult is the outcome for one topic, names first then ids, in
// request order. Err is nil or wraps a *kerr.Error.
type DeleteTopicResult struct {
	Name    string
	TopicID metadata.Uuid
	Err     error
}

// DeleteTopics deletes topics by name and by id in one batch. Like KRaft,
// internal topics are not protected; only delete.topic.enable=false refuses.
func (c *Controller) DeleteTopics(ctx context.Context, names []string, ids []metadata.Uuid) []DeleteTopicResult {
	results := make([]DeleteTopicResult, 0, len(names)+len(ids))
	nameCount := occurrences(names, func(n string) string { return n })
	idCount := occurrences(ids, func(id metadata.Uuid) metadata.Uuid { return id })
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	var recs []metadata.Record
	removing := map[metadata.Uuid]bool{}
	var ok []int
	resolve := func(res DeleteTopicResult, t *metadata.TopicImage, found, duplicate bool, unknown *kerr.Error, dupWhat string) {
		switch {
		case duplicate:
			res.Err = fmt.Errorf("%w: Duplicate topic %s.", kerr.InvalidRequest, dupWhat)
		case !found:
			res.Err = fmt.Errorf("%w: This server does not host this topic.", unknown)
			if unknown == kerr.UnknownTopicID {
				res.Err = fmt.Errorf("%w: This server does not host this topic ID.", unknown)
			}
		case c.cfg.DeleteTopicDisabled:
			res.Name, res.TopicID = t.Name, t.ID
			res.Err = fmt.Errorf("%w: Topic deletion is disabled.", kerr.TopicDeletionDisabled)
		default:
			res.Name, res.TopicID = t.Name, t.ID
			if !removing[t.ID] {
				removing[t.ID] = true
				recs = append(recs, &metadata.RemoveTopicRecord{TopicID: t.ID})
			}
			ok = append(ok, len(results))
		}
		results = append(results, res)
	}
	for _, name := range names {
		t, found := img.Topic(name)
		resolve(DeleteTopicResult{Name: name}, t, found, nameCount[name] > 1, kerr.UnknownTopicOrPartition, "name")
	}
	for _, id := range ids {
		t, found := img.TopicByID(id)
		resolve(DeleteTopicResult{TopicID: id}, t, found, idCount[id] > 1, kerr.UnknownTopicID, "id")
	}
	if len(recs) == 0 {
		return results
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		for _, i := range ok {
			results[i].Err = err
		}
		return results
	}
	for id := range removing {
		c.logger.Info("deleted topic", "id", id)
	}
	return results
}

// CreatePartitionsSpec asks to grow topic Name to Count partitions;
// Assignment, if given, lists the replicas of each new partition.
type CreatePartitionsSpec struct {
	Name       string
	Count      int32
	Assignment [][]int32
}

// CreatePartitionsResult is the outcome for one topic, in request order. Err
// is nil or wraps a *kerr.Error.
type CreatePartitionsResult struct {
	Name string
	Err  error
}

// CreatePartitions adds partitions to existing topics with Kafka's rules.
// All topics that pass validation are committed in one batch.
func (c *Controller) CreatePartitions(ctx context.Context, reqs []CreatePartitionsSpec, validateOnly bool) []CreatePartitionsResult {
	results := make([]CreatePartitionsResult, len(reqs))
	counts := occurrences(reqs, func(r CreatePartitionsSpec) string { return r.Name })
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	live := c.liveBrokersLocked(img)
	var recs []metadata.Record
	var ok []int
	for i, r := range reqs {
		results[i].Name = r.Name
		if counts[r.Name] > 1 {
			results[i].Err = errDuplicateTopicName
			continue
		}
		newRecs, err := c.planPartitionsLocked(img, live, r)
		if err != nil {
			results[i].Err = err
			continue
		}
		recs = append(recs, newRecs...)
		ok = append(ok, i)
	}
	if validateOnly || len(recs) == 0 {
		return results
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		for _, i := range ok {
			results[i].Err = err
		}
	}
	return results
}

func (c *Controller) planPartitionsLocked(img *metadata.Image, live []int32, r CreatePartitionsSpec) ([]metadata.Record, error) {
	t, found := img.Topic(r.Name)
	if !found {
		return nil, fmt.Errorf("%w: Topic '%s' does not exist.", kerr.UnknownTopicOrPartition, r.Name)
	}
	current := int32(len(t.Partitions))
	switch {
	case r.Count < current:
		return nil, fmt.Errorf("%w: Topic currently has %d partitions, which is higher than the requested %d.", kerr.InvalidPartitions, current, r.Count)
	case r.Count == current:
		return nil, fmt.Errorf("%w: Topic already has %d partitions.", kerr.InvalidPartitions, current)
	case r.Count-current > MaxPartitionsPerTopicCreate:
		return nil, fmt.Errorf("%w: Adding %d partitions exceeds the limit of %d per request.", kerr.InvalidPartitions, r.Count-current, MaxPartitionsPerTopicCreate)
	}
	add := r.Count - current
	rf := len(t.Partitions[0].Replicas)
	var assignment [][]int32
	if r.Assignment != nil {
		if int32(len(r.Assignment)) != add {
			return nil, fmt.Errorf("%w: Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", kerr.InvalidReplicaAssignment, add, len(r.Assignment))
		}
		if err := checkReplicaLists(r.Assignment, rf, live); err != nil {
			return nil, err
		}
		assignment = r.Assignment
	} else {
		if rf > len(live) {
			return nil, fmt.Errorf("%w: Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
				kerr.InvalidReplicationFactor, rf, rf, len(live))
		}
		assignment = placeReplicas(live, rackLookup(img), current, add, rf, c.mu.rng)
	}
	recs := make([]metadata.Record, 0, len(assignment))
	for i, replicas := range assignment {
		replicas = slices.Clone(replicas)
		recs = append(recs, &metadata.PartitionRecord{
			TopicID: t.ID, Partition: current + int32(i), Replicas: replicas, ISR: slices.Clone(replicas),
			Leader: replicas[0],
		})
	}
	return recs, nil
}

// errDuplicateTopicName answers a topic named more than once in a
// CreateTopics or CreatePartitions request, as Kafka does.
var errDuplicateTopicName = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)

// occurrences counts how often each key occurs among items: a request that
// names a topic more than once is refused for that topic.
func occurrences[K comparable, T any](items []T, key func(T) K) map[K]int {
	n := make(map[K]int, len(items))
	for _, it := range items {
		n[key(it)]++
	}
	return n
}
