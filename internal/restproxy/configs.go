package restproxy

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configSynonym is one synonym of a config.
type configSynonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

// configData is Confluent's KafkaTopicConfig, KafkaBrokerConfig and
// KafkaClusterConfig (which fields are set depends on the kind).
type configData struct {
	Kind        string          `json:"kind"`
	Metadata    resourceMeta    `json:"metadata"`
	ClusterID   string          `json:"cluster_id"`
	TopicName   string          `json:"topic_name,omitempty"`
	BrokerID    *int32          `json:"broker_id,omitempty"`
	ConfigType  string          `json:"config_type,omitempty"`
	Name        string          `json:"name"`
	Value       *string         `json:"value"`
	IsDefault   bool            `json:"is_default"`
	IsReadOnly  bool            `json:"is_read_only"`
	IsSensitive bool            `json:"is_sensitive"`
	Source      string          `json:"source"`
	Synonyms    []configSynonym `json:"synonyms"`
}

// configScope is which resource's configs a request addresses.
type configScope struct {
	kind     string // KafkaTopicConfig, KafkaBrokerConfig, KafkaClusterConfig
	resType  kmsg.ConfigResourceType
	resName  string // topic, broker id, or "" (cluster-wide broker defaults)
	base     string // the collection's URL
	crnParts []string
	topic    string
	broker   *int32
}

func (p *Proxy) routesConfigs() {
	for _, s := range []struct{ prefix, kind string }{
		{"/v3/clusters/{cluster_id}/topics/{topic_name}/configs", "topic"},
		{"/v3/clusters/{cluster_id}/brokers/{broker_id}/configs", "broker"},
		{"/v3/clusters/{cluster_id}/broker-configs", "cluster"},
	} {
		kind := s.kind
		p.v3("GET "+s.prefix, func(w http.ResponseWriter, r *http.Request) error { return p.listConfigs(w, r, kind) })
		p.v3("GET "+s.prefix+"/{name}", func(w http.ResponseWriter, r *http.Request) error { return p.getConfig(w, r, kind) })
		p.v3("PUT "+s.prefix+"/{name}", func(w http.ResponseWriter, r *http.Request) error { return p.putConfig(w, r, kind) })
		p.v3("DELETE "+s.prefix+"/{name}", func(w http.ResponseWriter, r *http.Request) error { return p.resetConfig(w, r, kind) })
		p.v3("POST "+s.prefix+":alter", func(w http.ResponseWriter, r *http.Request) error { return p.alterConfigs(w, r, kind) })
	}
}

// scope resolves the request's resource, checking it exists.
func (p *Proxy) scope(r *http.Request, c *kafkaClient, cluster, kind string) (configScope, error) {
	base := baseURL(r) + "/v3/clusters/" + cluster
	switch kind {
	case "topic":
		t := r.PathValue("topic_name")
		if _, err := describeTopic(r, c, t); err != nil {
			return configScope{}, err
		}
		return configScope{kind: "KafkaTopicConfig", resType: kmsg.ConfigResourceTypeTopic, resName: t,
			base: base + "/topics/" + t + "/configs", crnParts: []string{"topic", t}, topic: t}, nil
	case "broker":
		notFound := bareErr(http.StatusNotFound, "Broker %s cannot be found.", r.PathValue("broker_id"))
		id, err := intPath(r, "broker_id", notFound)
		if err != nil {
			return configScope{}, err
		}
		brokers, _, _, err := p.clusterInfo(r, c)
		if err != nil {
			return configScope{}, err
		}
		found := false
		for _, b := range brokers {
			found = found || b.NodeID == id
		}
		if !found {
			return configScope{}, notFound
		}
		s := strconv.Itoa(int(id))
		return configScope{kind: "KafkaBrokerConfig", resType: kmsg.ConfigResourceTypeBroker, resName: s,
			base: base + "/brokers/" + s + "/configs", crnParts: []string{"broker", s}, broker: &id}, nil
	}
	return configScope{kind: "KafkaClusterConfig", resType: kmsg.ConfigResourceTypeBroker, resName: "",
		base: base + "/broker-configs", crnParts: []string{"broker-config", ""}}, nil
}

// describe reads the scope's configs with their synonyms and read-only
// flags.
func (p *Proxy) describe(r *http.Request, c *kafkaClient, cluster string, s configScope, name string) ([]configData, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = s.resType, s.resName
	if name != "" {
		res.ConfigNames = []string{name}
	}
	req.Resources = append(req.Resources, res)
	cx, cancel := ctx(r)
	defer cancel()
	resp, err := req.RequestWith(cx, c.kgo)
	if err != nil {
		return nil, err
	}
	var out []configData
	for _, rr := range resp.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			return nil, err
		}
		for _, e := range rr.Configs {
			if s.kind == "KafkaClusterConfig" && e.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				continue // broker-configs lists the cluster-wide dynamic defaults
			}
			crnParts := append(append([]string(nil), s.crnParts...), "config", e.Name)
			if s.kind == "KafkaClusterConfig" {
				crnParts = []string{"broker-config", e.Name}
			}
			d := configData{
				Kind: s.kind, Metadata: resourceMeta{Self: s.base + "/" + e.Name, ResourceName: crn(cluster, crnParts...)},
				ClusterID: cluster, TopicName: s.topic, BrokerID: s.broker, Name: e.Name, Value: e.Value,
				IsDefault:  e.IsDefault || e.Source == kmsg.ConfigSourceDefaultConfig,
				IsReadOnly: e.ReadOnly, IsSensitive: e.IsSensitive, Source: e.Source.String(), Synonyms: []configSynonym{},
			}
			if s.kind == "KafkaClusterConfig" {
				d.ConfigType = "BROKER"
			}
			for _, syn := range e.ConfigSynonyms {
				d.Synonyms = append(d.Synonyms, configSynonym{Name: syn.Name, Value: syn.Value, Source: syn.Source.String()})
			}
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p *Proxy) listConfigs(w http.ResponseWriter, r *http.Request, kind string) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	s, err := p.scope(r, c, cluster, kind)
	if err != nil {
		return err
	}
	out, err := p.describe(r, c, cluster, s, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", newList(s.kind+"List", selfURL(r), out))
	return nil
}

func (p *Proxy) getConfig(w http.ResponseWriter, r *http.Request, kind string) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	s, err := p.scope(r, c, cluster, kind)
	if err != nil {
		return err
	}
	out, err := p.describe(r, c, cluster, s, r.PathValue("name"))
	if err != nil {
		return err
	}
	for _, d := range out {
		if d.Name == r.PathValue("name") {
			writeJSON(w, http.StatusOK, "application/json", d)
			return nil
		}
	}
	return bareErr(http.StatusNotFound, "Config %s cannot be found.", r.PathValue("name"))
}

// alterConfigEntry is one entry of a configs:alter request.
type alterConfigEntry struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Operation string  `json:"operation"` // SET (default) or DELETE
}

func (p *Proxy) putConfig(w http.ResponseWriter, r *http.Request, kind string) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	var req struct {
		Value *string `json:"value"`
	}
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	return p.alter(w, r, kind, []alterConfigEntry{{Name: r.PathValue("name"), Value: req.Value}}, false)
}

func (p *Proxy) resetConfig(w http.ResponseWriter, r *http.Request, kind string) error {
	return p.alter(w, r, kind, []alterConfigEntry{{Name: r.PathValue("name"), Operation: "DELETE"}}, false)
}

func (p *Proxy) alterConfigs(w http.ResponseWriter, r *http.Request, kind string) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	var req struct {
		Data         []alterConfigEntry `json:"data"`
		ValidateOnly bool               `json:"validate_only"`
	}
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	return p.alter(w, r, kind, req.Data, req.ValidateOnly)
}

// alter applies the entries incrementally (IncrementalAlterConfigs): 204.
func (p *Proxy) alter(w http.ResponseWriter, r *http.Request, kind string, entries []alterConfigEntry, validateOnly bool) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	s, err := p.scope(r, c, cluster, kind)
	if err != nil {
		return err
	}
	var acs []kadm.AlterConfig
	for _, e := range entries {
		switch e.Operation {
		case "", "SET", "set":
			acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: e.Name, Value: e.Value})
		case "DELETE", "delete":
			acs = append(acs, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: e.Name})
		default:
			return errPayload("operation must be SET or DELETE, not %q.", e.Operation)
		}
	}
	cx, cancel := ctx(r)
	defer cancel()
	var rs kadm.AlterConfigsResponses
	switch {
	case s.resType == kmsg.ConfigResourceTypeTopic && validateOnly:
		rs, err = c.adm.ValidateAlterTopicConfigs(cx, acs, s.resName)
	case s.resType == kmsg.ConfigResourceTypeTopic:
		rs, err = c.adm.AlterTopicConfigs(cx, acs, s.resName)
	case validateOnly:
		rs, err = c.adm.ValidateAlterBrokerConfigs(cx, acs, brokersOf(s)...)
	default:
		rs, err = c.adm.AlterBrokerConfigs(cx, acs, brokersOf(s)...)
	}
	if err != nil {
		return err
	}
	for _, res := range rs {
		if res.Err != nil {
			ae := kafkaErr(res.Err)
			if res.ErrMessage != "" {
				ae.msg = res.ErrMessage
			}
			return ae
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// brokersOf is the scope's broker, none for the cluster-wide defaults.
func brokersOf(s configScope) []int32 {
	if s.broker != nil {
		return []int32{*s.broker}
	}
	return nil
}
