package restproxy

import (
	"net/http"
	"net/url"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclData is Confluent's KafkaAcl.
type aclData struct {
	Kind         string       `json:"kind"`
	Metadata     resourceMeta `json:"metadata"`
	ClusterID    string       `json:"cluster_id"`
	ResourceType string       `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  string       `json:"pattern_type"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    string       `json:"operation"`
	Permission   string       `json:"permission"`
}

// aclFilter is an ACL binding or filter in Kafka's terms.
type aclFilter struct {
	resType    kmsg.ACLResourceType
	name       *string
	pattern    kmsg.ACLResourcePatternType
	principal  *string
	host       *string
	operation  kmsg.ACLOperation
	permission kmsg.ACLPermissionType
}

func (p *Proxy) routesACLs() {
	pre := "/v3/clusters/{cluster_id}/acls"
	p.v3("GET "+pre, p.searchACLs)
	p.v3("POST "+pre, p.createACL)
	p.v3("DELETE "+pre, p.deleteACLs)
}

func aclOf(r *http.Request, cluster string, a aclFilter) aclData {
	d := aclData{Kind: "KafkaAcl", ClusterID: cluster, ResourceType: a.resType.String(), PatternType: a.pattern.String(),
		Operation: a.operation.String(), Permission: a.permission.String()}
	if a.name != nil {
		d.ResourceName = *a.name
	}
	if a.principal != nil {
		d.Principal = *a.principal
	}
	if a.host != nil {
		d.Host = *a.host
	}
	q := url.Values{}
	q.Set("resource_type", d.ResourceType)
	q.Set("resource_name", d.ResourceName)
	q.Set("pattern_type", d.PatternType)
	q.Set("principal", d.Principal)
	q.Set("host", d.Host)
	q.Set("operation", d.Operation)
	q.Set("permission", d.Permission)
	d.Metadata = resourceMeta{Self: baseURL(r) + "/v3/clusters/" + cluster + "/acls?" + q.Encode()}
	return d
}

// parseFilter reads an ACL filter from get (query parameters or body
// fields); unset fields are ANY, or fail when required (create).
func parseFilter(get func(string) string, create bool) (aclFilter, error) {
	f := aclFilter{resType: kmsg.ACLResourceTypeAny, pattern: kmsg.ACLResourcePatternTypeAny,
		operation: kmsg.ACLOperationAny, permission: kmsg.ACLPermissionTypeAny}
	if create {
		f.pattern = kmsg.ACLResourcePatternTypeLiteral
	}
	var err error
	if v := get("resource_type"); v != "" {
		if f.resType, err = kmsg.ParseACLResourceType(v); err != nil || f.resType == kmsg.ACLResourceTypeUnknown {
			return f, errPayload("Invalid resource_type %q.", v)
		}
	} else if create {
		return f, errPayload("resource_type is required.")
	}
	if v := get("pattern_type"); v != "" {
		if f.pattern, err = kmsg.ParseACLResourcePatternType(v); err != nil || f.pattern == kmsg.ACLResourcePatternTypeUnknown {
			return f, errPayload("Invalid pattern_type %q.", v)
		}
	}
	if v := get("operation"); v != "" {
		if f.operation, err = kmsg.ParseACLOperation(v); err != nil || f.operation == kmsg.ACLOperationUnknown {
			return f, errPayload("Invalid operation %q.", v)
		}
	} else if create {
		return f, errPayload("operation is required.")
	}
	if v := get("permission"); v != "" {
		if f.permission, err = kmsg.ParseACLPermissionType(v); err != nil || f.permission == kmsg.ACLPermissionTypeUnknown {
			return f, errPayload("Invalid permission %q.", v)
		}
	} else if create {
		return f, errPayload("permission is required.")
	}
	str := func(k string) *string {
		if v := get(k); v != "" {
			return &v
		}
		return nil
	}
	f.name, f.principal, f.host = str("resource_name"), str("principal"), str("host")
	if create {
		if f.resType == kmsg.ACLResourceTypeAny || f.pattern == kmsg.ACLResourcePatternTypeAny || f.pattern == kmsg.ACLResourcePatternTypeMatch ||
			f.operation == kmsg.ACLOperationAny || f.permission == kmsg.ACLPermissionTypeAny {
			return f, errPayload("An ACL to create cannot use ANY or MATCH.")
		}
		if f.principal == nil {
			return f, errPayload("principal is required.")
		}
		if f.host == nil {
			h := "*"
			f.host = &h
		}
		if f.name == nil {
			if f.resType != kmsg.ACLResourceTypeCluster {
				return f, errPayload("resource_name is required.")
			}
			n := "kafka-cluster"
			f.name = &n
		}
	}
	return f, nil
}

func (p *Proxy) searchACLs(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	f, err := parseFilter(r.URL.Query().Get, false)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = f.resType, f.name, f.pattern
	req.Principal, req.Host, req.Operation, req.PermissionType = f.principal, f.host, f.operation, f.permission
	cx, cancel := ctx(r)
	defer cancel()
	resp, err := req.RequestWith(cx, c.kgo)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return withMessage(err, resp.ErrorMessage)
	}
	var out []aclData
	for _, res := range resp.Resources {
		for _, a := range res.ACLs {
			name, pr, host := res.ResourceName, a.Principal, a.Host
			out = append(out, aclOf(r, cluster, aclFilter{resType: res.ResourceType, name: &name, pattern: res.ResourcePatternType,
				principal: &pr, host: &host, operation: a.Operation, permission: a.PermissionType}))
		}
	}
	writeJSON(w, http.StatusOK, "application/json", newList("KafkaAclList", selfURL(r), out))
	return nil
}

func (p *Proxy) createACL(w http.ResponseWriter, r *http.Request) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	c, _, err := p.cluster(r)
	if err != nil {
		return err
	}
	var body map[string]string
	if err := readBody(r, p.cfg.MaxRequestBytes, &body); err != nil {
		return err
	}
	f, err := parseFilter(func(k string) string { return body[k] }, true)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = f.resType, *f.name, f.pattern
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = *f.principal, *f.host, f.operation, f.permission
	req.Creations = append(req.Creations, cr)
	cx, cancel := ctx(r)
	defer cancel()
	resp, err := req.RequestWith(cx, c.kgo)
	if err != nil {
		return err
	}
	for _, res := range resp.Results {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return withMessage(err, res.ErrorMessage)
		}
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (p *Proxy) deleteACLs(w http.ResponseWriter, r *http.Request) error {
	c, cluster, err := p.cluster(r)
	if err != nil {
		return err
	}
	f, err := parseFilter(r.URL.Query().Get, false)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourceName, df.ResourcePatternType = f.resType, f.name, f.pattern
	df.Principal, df.Host, df.Operation, df.PermissionType = f.principal, f.host, f.operation, f.permission
	req.Filters = append(req.Filters, df)
	cx, cancel := ctx(r)
	defer cancel()
	resp, err := req.RequestWith(cx, c.kgo)
	if err != nil {
		return err
	}
	var out []aclData
	for _, res := range resp.Results {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return withMessage(err, res.ErrorMessage)
		}
		for _, a := range res.MatchingACLs {
			name, pr, host := a.ResourceName, a.Principal, a.Host
			out = append(out, aclOf(r, cluster, aclFilter{resType: a.ResourceType, name: &name, pattern: a.ResourcePatternType,
				principal: &pr, host: &host, operation: a.Operation, permission: a.PermissionType}))
		}
	}
	if out == nil {
		out = []aclData{}
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]any{"data": out})
	return nil
}

// withMessage is a Kafka error carrying the broker's message.
func withMessage(err error, msg *string) error {
	ae := kafkaErr(err)
	if msg != nil && *msg != "" {
		ae.msg = *msg
	}
	return ae
}
