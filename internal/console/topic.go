package console

import (
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicPage is one topic: its partitions and configs.
type TopicPage struct {
	Name       string
	ID         string
	Internal   bool
	Partitions []PartitionRow
	Size       int64
	Messages   int64 // end minus start offsets, summed: records and control batches' offsets
	Configs    []ConfigRow
	ConfigErr  string
	SizeErr    string
}

// PartitionRow is one partition of a topic.
type PartitionRow struct {
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
	Start, End  int64
	Size        int64
	Err         string
}

// UnderReplicated reports an ISR smaller than the replica set.
func (p PartitionRow) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// ConfigRow is one topic config and where its value comes from.
type ConfigRow struct {
	Name      string
	Value     string
	Source    string // DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, ...
	Sensitive bool
	Default   bool
}

// topic answers GET /topics/{topic}.
func (c *Console) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	ctx, cancel := c.ctx(r)
	defer cancel()
	td, err := c.adm.ListTopicsWithInternal(ctx, name)
	if err == nil {
		err = td[name].Err
	}
	if err == nil && len(td[name].Partitions) == 0 {
		err = kerr.UnknownTopicOrPartition
	}
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			status = http.StatusNotFound
		}
		c.fail(w, r, status, "Topic "+name, err, "")
		return
	}
	t := td[name]
	p := TopicPage{Name: name, ID: t.ID.String(), Internal: t.IsInternal}
	starts, err := c.adm.ListStartOffsets(ctx, name)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Topic "+name, err, "")
		return
	}
	ends, err := c.adm.ListEndOffsets(ctx, name)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Topic "+name, err, "")
		return
	}
	sizes, err := c.partitionSizes(r, kadm.TopicsSet{name: nil})
	if err != nil {
		p.SizeErr = err.Error()
	}
	for _, pd := range t.Partitions.Sorted() {
		row := PartitionRow{Partition: pd.Partition, Leader: pd.Leader, LeaderEpoch: pd.LeaderEpoch,
			Replicas: pd.Replicas, ISR: pd.ISR, Offline: pd.OfflineReplicas, Start: -1, End: -1, Size: -1}
		var errs []string
		if pd.Err != nil {
			errs = append(errs, pd.Err.Error())
		}
		if o, ok := starts.Lookup(name, pd.Partition); ok {
			if o.Err != nil {
				errs = append(errs, "start offset: "+o.Err.Error())
			} else {
				row.Start = o.Offset
			}
		}
		if o, ok := ends.Lookup(name, pd.Partition); ok {
			if o.Err != nil {
				errs = append(errs, "end offset: "+o.Err.Error())
			} else {
				row.End = o.Offset
			}
		}
		if row.Start >= 0 && row.End >= row.Start {
			p.Messages += row.End - row.Start
		}
		if s, ok := sizes[name][pd.Partition]; ok {
			row.Size = s
			p.Size += s
		}
		row.Err = strings.Join(errs, "; ")
		p.Partitions = append(p.Partitions, row)
	}
	if sizes == nil {
		p.Size = -1
	}
	rcs, err := c.adm.DescribeTopicConfigs(ctx, name)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(name, nil)
		if err == nil {
			err = rc.Err
		}
		for _, cfg := range rc.Configs {
			row := ConfigRow{Name: cfg.Key, Source: cfg.Source.String(), Sensitive: cfg.Sensitive}
			row.Default = row.Source == "DEFAULT_CONFIG"
			if cfg.Value != nil {
				row.Value = *cfg.Value
			}
			p.Configs = append(p.Configs, row)
		}
		sort.Slice(p.Configs, func(i, j int) bool { return p.Configs[i].Name < p.Configs[j].Name })
	}
	if err != nil {
		p.ConfigErr = failureOf("", err, "").Message
	}
	c.render(w, http.StatusOK, "topic", "Topic "+name, "topics", p)
}
