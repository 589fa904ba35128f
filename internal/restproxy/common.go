package restproxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// requestTimeout bounds the Kafka requests one REST request makes.
const requestTimeout = 30 * time.Second

// writeJSON writes v as the response body.
func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// related is a link to a collection or resource.
type related struct {
	Related string `json:"related"`
}

// resourceMeta is every v3 object's metadata.
type resourceMeta struct {
	Self         string `json:"self"`
	ResourceName string `json:"resource_name,omitempty"`
}

// listMeta is every v3 collection's metadata.
type listMeta struct {
	Self string  `json:"self"`
	Next *string `json:"next"`
}

// list is a v3 collection.
type list[T any] struct {
	Kind     string   `json:"kind"`
	Metadata listMeta `json:"metadata"`
	Data     []T      `json:"data"`
}

func newList[T any](kind, self string, data []T) list[T] {
	if data == nil {
		data = []T{}
	}
	return list[T]{Kind: kind, Metadata: listMeta{Self: self}, Data: data}
}

// baseURL is the scheme and host the request reached, the prefix of every
// metadata.self.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// selfURL is the request's own URL.
func selfURL(r *http.Request) string { return baseURL(r) + r.URL.Path }

// crn is a Confluent resource name: crn:///kafka=<cluster>/<kind>=<name>/...
func crn(cluster string, parts ...string) string {
	var b strings.Builder
	b.WriteString("crn:///kafka=")
	b.WriteString(cluster)
	for i := 0; i+1 < len(parts); i += 2 {
		b.WriteString("/")
		b.WriteString(parts[i])
		b.WriteString("=")
		b.WriteString(parts[i+1])
	}
	return b.String()
}

// ctx is a request's context bounded by requestTimeout.
func ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), requestTimeout)
}

// readBody decodes a JSON request body of at most limit bytes into v.
func readBody(r *http.Request, limit int64, v any) error {
	if r.ContentLength > limit {
		return errf(codeTooLarge, "Request body larger than %d bytes", limit)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return bareErr(http.StatusBadRequest, "reading the request body: %v", err)
	}
	if int64(len(body)) > limit {
		return errf(codeTooLarge, "Request body larger than %d bytes", limit)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return errPayload("Request body is empty. Data is required.")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return jsonErr(err)
	}
	return nil
}

// jsonErr is a malformed body's error: 400 with Confluent's bare code, as
// Jackson's parse failures are answered.
func jsonErr(err error) *apiError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return bareErr(http.StatusBadRequest, "Unexpected character: %v at offset %d", err, se.Offset)
	case errors.As(err, &te):
		return errf(codeJSONConversion, "Conversion of JSON to Object failed: field %s: %v", te.Field, err)
	}
	return bareErr(http.StatusBadRequest, "Malformed JSON: %v", err)
}

// mediaType is the request's Content-Type without parameters, lower-cased.
func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// requireJSON refuses a v3 body that is not application/json.
func requireJSON(r *http.Request) error {
	if mt := mediaType(r); mt != "application/json" {
		return bareErr(http.StatusUnsupportedMediaType, "HTTP 415 Unsupported Media Type: %q (want application/json)", r.Header.Get("Content-Type"))
	}
	return nil
}

// clusterInfo is the cluster's id, controller and brokers.
func (p *Proxy) clusterInfo(r *http.Request, c *kafkaClient) (kadm.BrokerDetails, string, int32, error) {
	cx, cancel := ctx(r)
	defer cancel()
	m, err := c.adm.BrokerMetadata(cx)
	if err != nil {
		return nil, "", 0, err
	}
	return m.Brokers, m.Cluster, m.Controller, nil
}

// cluster resolves the request's {cluster_id}: 404 unless it is the
// cluster's.
func (p *Proxy) cluster(r *http.Request) (*kafkaClient, string, error) {
	c, err := p.clients.get(r)
	if err != nil {
		return nil, "", err
	}
	_, id, _, err := p.clusterInfo(r, c)
	if err != nil {
		return nil, "", err
	}
	if want := r.PathValue("cluster_id"); want != id {
		return nil, "", bareErr(http.StatusNotFound, "Cluster %s cannot be found.", want)
	}
	return c, id, nil
}

// intPath parses an integer path segment.
func intPath(r *http.Request, name string, notFound *apiError) (int32, error) {
	v, err := strconv.ParseInt(r.PathValue(name), 10, 32)
	if err != nil {
		return 0, notFound
	}
	return int32(v), nil
}
