package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var embedded embed.FS

// staticFS is the stylesheet (and anything else under static/), served at
// /static/.
var staticFS, _ = fs.Sub(embedded, "static")

// pageNames are the templates under templates/, each a "content" block
// rendered inside layout.html.
var pageNames = []string{"overview", "topics", "topic", "messages", "groups", "group", "error"}

// pages holds one parsed template per page.
type pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"bytes":  humanBytes,
	"join":   joinInt32s,
	"millis": func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z") },
	"query":  query,
	"add":    func(a, b int) int { return a + b },
	"boolq": func(b bool) string {
		if b {
			return "1"
		}
		return ""
	},
	// flip is the desc= of a column header's link: descending when the
	// list is sorted ascending by that column already.
	"flip": func(l TopicList, key string) string {
		if l.Sort == key && !l.Desc {
			return "1"
		}
		return ""
	},
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, fmt.Errorf("dict: odd number of arguments")
		}
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m, nil
	},
}

func parsePages() (*pages, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// page is what every template gets: the page's own data under Data.
type page struct {
	Title    string
	Nav      string // the navigation entry to mark current
	ReadOnly bool
	Data     any
}

// render writes a page with status; the template runs into a buffer first,
// so a failing template is a 500, not half a page.
func (c *Console) render(w http.ResponseWriter, status int, name, title, nav string, data any) {
	var buf bytes.Buffer
	if err := c.pages.byName[name].Execute(&buf, page{Title: title, Nav: nav, ReadOnly: c.cfg.ReadOnly, Data: data}); err != nil {
		c.log.Error("console: rendering", "page", name, "err", err)
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// Failure is a refused or failed request as the error page shows it: the
// Kafka error name when there is one, what was tried, and what to do.
type Failure struct {
	Heading string
	Kafka   string // Kafka's error name (TOPIC_ALREADY_EXISTS), or ""
	Message string
	Hint    string
}

// failureOf describes err: a Kafka error by its name and a hint for it.
func failureOf(heading string, err error, hint string) Failure {
	f := Failure{Heading: heading, Message: err.Error(), Hint: hint}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		f.Kafka = ke.Message
		if h := kafkaHints[ke.Code]; h != "" {
			f.Hint = h
		} else if f.Hint == "" {
			f.Hint = ke.Description
		}
	}
	return f
}

// kafkaHints say what to do about the errors a console user meets; other
// errors show Kafka's own description.
var kafkaHints = map[int16]string{
	kerr.TopicAlreadyExists.Code:                 "A topic of that name exists already: pick another name, or open the existing topic.",
	kerr.InvalidTopicException.Code:              "Topic names are up to 249 characters of letters, digits, '.', '_' and '-', and not '.' or '..'.",
	kerr.InvalidPartitions.Code:                  "A topic needs at least one partition.",
	kerr.InvalidReplicationFactor.Code:           "The replication factor must be at least 1 and at most the number of brokers.",
	kerr.InvalidConfig.Code:                      "One of the configs is not a topic config or has a value the broker refuses: check its name and value.",
	kerr.UnknownTopicOrPartition.Code:            "The topic (or partition) does not exist, or was just deleted: go back to the topics list.",
	kerr.TopicAuthorizationFailed.Code:           "The console's principal lacks the ACL for this topic operation: grant it, or use another principal.",
	kerr.ClusterAuthorizationFailed.Code:         "The console's principal lacks a cluster ACL for this operation.",
	kerr.GroupAuthorizationFailed.Code:           "The console's principal lacks DESCRIBE on this group.",
	kerr.TopicDeletionDisabled.Code:              "The brokers have delete.topic.enable=false.",
	kerr.PolicyViolation.Code:                    "The broker's create-topic policy refused this topic.",
	kerr.CoordinatorNotAvailable.Code:            "The group coordinator is not available yet: retry in a moment.",
	kerr.NotController.Code:                      "The controller moved: retry.",
	kerr.RequestTimedOut.Code:                    "The cluster did not answer in time: retry, or check the brokers.",
	kerr.OffsetOutOfRange.Code:                   "The offset is outside the partition's log: pick one between its start and end offsets.",
	kerr.GroupIDNotFound.Code:                    "No group of that name: it may have expired after its members left.",
	kerr.UnsupportedVersion.Code:                 "The broker does not support a request the console needs.",
	kerr.BrokerNotAvailable.Code:                 "A broker is down: check the overview.",
	kerr.LeaderNotAvailable.Code:                 "The partition has no leader right now: retry in a moment.",
	kerr.NotEnoughReplicas.Code:                  "Fewer in-sync replicas than min.insync.replicas: check the brokers.",
	kerr.InvalidRequest.Code:                     "The request was malformed: check the form's values.",
	kerr.UnknownServerError.Code:                 "The broker failed on this request: its log says why.",
	kerr.SecurityDisabled.Code:                   "Security is not enabled on the cluster.",
	kerr.SaslAuthenticationFailed.Code:           "The console's SASL credentials were refused: check --command-config.",
	kerr.ReassignmentInProgress.Code:             "A reassignment of this topic is in progress: wait for it to finish.",
	kerr.InvalidReplicaAssignment.Code:           "The replica assignment is invalid: check the broker ids.",
	kerr.ThrottlingQuotaExceeded.Code:            "The controller mutation quota was exceeded: retry in a moment.",
	kerr.NotCoordinator.Code:                     "The group coordinator moved: retry.",
	kerr.CoordinatorLoadInProgress.Code:          "The group coordinator is loading its state: retry in a moment.",
	kerr.UnknownTopicID.Code:                     "The topic was deleted or recreated: go back to the topics list.",
	kerr.InconsistentTopicID.Code:                "The topic was recreated while the page loaded: reload.",
	kerr.InvalidTimestamp.Code:                   "The timestamp is out of range.",
	kerr.NotLeaderForPartition.Code:              "The leader moved: retry.",
	kerr.FencedLeaderEpoch.Code:                  "The leader moved: retry.",
	kerr.UnknownLeaderEpoch.Code:                 "The leader moved: retry.",
	kerr.OffsetNotAvailable.Code:                 "The partition's offsets are not available yet: retry in a moment.",
	kerr.KafkaStorageError.Code:                  "A log directory on the leader failed: check its disk.",
	kerr.TransactionalIDAuthorizationFailed.Code: "The console's principal lacks a transactional id ACL.",
}

// fail renders the error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, heading string, err error, hint string) {
	f := failureOf(heading, err, hint)
	if f.Kafka != "" && status == http.StatusInternalServerError {
		status = http.StatusBadGateway
	}
	c.render(w, status, "error", heading, "", f)
}

// humanBytes is a byte count in KiB, MiB, ... with one decimal.
func humanBytes(n int64) string {
	if n < 0 {
		return "–"
	}
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func joinInt32s(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ", ")
}

// query builds a query string from key, value pairs, skipping empty values.
func query(kv ...any) template.URL {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		s := fmt.Sprint(kv[i+1])
		if s != "" {
			v.Set(fmt.Sprint(kv[i]), s)
		}
	}
	return template.URL(v.Encode())
}
