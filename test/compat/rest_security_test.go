package compat

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

const restJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// TestRestACLs: with rest.authentication.method=BASIC every request is
// made to Kafka as its caller (SASL PLAIN with the basic-auth password), so
// the broker's ACLs decide: alice, with no ACL, is refused with 403 and
// Confluent's 40301; a wrong password is 401 and 40101; once admin grants
// her WRITE through the v3 ACL API her records go in, and once admin
// deletes the grant she is refused again.
func TestRestACLs(t *testing.T) {
	t.Parallel()
	saslAddr := freeport.Addr(t)
	admin := []string{"Authorization", basicAuth("admin", "admin-secret")}
	rb := startRestBrokerAs(t, admin,
		WithExtraListeners("SASL_PLAINTEXT://"+saslAddr),
		WithOverride("inter.broker.listener.name", "PLAINTEXT"),
		WithOverride("authorizer.class.name", standardAuthorizer),
		WithOverride("super.users", "User:admin"),
		WithOverride("sasl.enabled.mechanisms", "PLAIN"),
		WithOverride("listener.name.sasl_plaintext.plain.sasl.jaas.config", restJAAS),
		WithOverride("rest.authentication.method", "BASIC"),
		WithOverride("rest.client.sasl.mechanism", "PLAIN"),
	)
	anonymous := &restBroker{Broker: rb.Broker, url: rb.url}
	if r := anonymous.do(t, http.MethodGet, "/v3/clusters", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d %s", r.status, r.body)
	}
	alice := []string{"Authorization", basicAuth("alice", "alice-secret")}

	topic := uniqueTopic(t)
	rb.mustJSON(t, http.MethodPost, rb.v3("/topics"), jsonCT, map[string]any{"topic_name": topic, "partitions_count": 1}, http.StatusCreated, nil, admin...)
	record := map[string]any{"value": map[string]any{"type": "STRING", "data": "from alice"}}

	rb.wantError(t, rb.do(t, http.MethodGet, "/v3/clusters", "", nil, "Authorization", basicAuth("alice", "wrong")), http.StatusUnauthorized, 40101)
	rb.wantError(t, rb.do(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, record, alice...), http.StatusForbidden, 40301)
	rb.wantError(t, rb.do(t, http.MethodPost, rb.v3("/topics"), jsonCT, map[string]any{"topic_name": topic + "-alice"}, alice...), http.StatusForbidden, 40301)
	rb.wantError(t, rb.do(t, http.MethodPost, "/topics/"+topic, v2JSONCT, map[string]any{"records": []any{map[string]any{"value": 1}}}, alice...), http.StatusForbidden, 40301)
	// alice cannot grant herself anything.
	grant := func(op string) map[string]string {
		return map[string]string{"resource_type": "TOPIC", "resource_name": topic, "pattern_type": "LITERAL",
			"principal": "User:alice", "host": "*", "operation": op, "permission": "ALLOW"}
	}
	rb.wantError(t, rb.do(t, http.MethodPost, rb.v3("/acls"), jsonCT, grant("WRITE"), alice...), http.StatusForbidden, 40301)

	rb.mustJSON(t, http.MethodPost, rb.v3("/acls"), jsonCT, grant("WRITE"), http.StatusCreated, nil, admin...)
	rb.mustJSON(t, http.MethodPost, rb.v3("/acls"), jsonCT, grant("DESCRIBE"), http.StatusCreated, nil, admin...)
	var acls struct {
		Kind string `json:"kind"`
		Data []struct {
			Kind         string `json:"kind"`
			ResourceType string `json:"resource_type"`
			ResourceName string `json:"resource_name"`
			Principal    string `json:"principal"`
			Operation    string `json:"operation"`
			Permission   string `json:"permission"`
		} `json:"data"`
	}
	q := url.Values{"resource_type": {"TOPIC"}, "resource_name": {topic}, "principal": {"User:alice"}}
	rb.mustJSON(t, http.MethodGet, rb.v3("/acls?"+q.Encode()), "", nil, http.StatusOK, &acls, admin...)
	if acls.Kind != "KafkaAclList" || len(acls.Data) != 2 || acls.Data[0].Kind != "KafkaAcl" || acls.Data[0].ResourceName != topic || acls.Data[0].Permission != "ALLOW" {
		t.Fatalf("ACL search: %+v", acls)
	}
	poll.Until(t, 30*time.Second, "alice's produce to be allowed", func() error {
		r := rb.do(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, record, alice...)
		if r.status != http.StatusOK {
			return &restStatusError{r}
		}
		return nil
	})

	var deleted struct {
		Data []struct {
			Operation string `json:"operation"`
		} `json:"data"`
	}
	q = url.Values{"resource_type": {"TOPIC"}, "resource_name": {topic}, "pattern_type": {"LITERAL"}, "principal": {"User:alice"}, "operation": {"WRITE"}, "permission": {"ALLOW"}}
	rb.mustJSON(t, http.MethodDelete, rb.v3("/acls?"+q.Encode()), "", nil, http.StatusOK, &deleted, admin...)
	if len(deleted.Data) != 1 || deleted.Data[0].Operation != "WRITE" {
		t.Fatalf("deleted: %+v", deleted)
	}
	poll.True(t, 30*time.Second, "alice's produce to be refused again", func() bool {
		return rb.do(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, record, alice...).status == http.StatusForbidden
	})
	rb.wantError(t, rb.do(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, record, alice...), http.StatusForbidden, 40301)
}

// restStatusError reports an unexpected answer while polling.
type restStatusError struct{ r restResponse }

func (e *restStatusError) Error() string { return fmt.Sprintf("status %d: %s", e.r.status, e.r.body) }

func basicAuth(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth(user, pass)
	return req.Header.Get("Authorization")
}
