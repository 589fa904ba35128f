package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TopicRow is one line of the topics list.
type TopicRow struct {
	Name              string
	Internal          bool
	Partitions        int
	ReplicationFactor int
	// Size is the bytes of the topic's log on disk, each partition
	// counted once (its largest replica); -1 when the brokers did not
	// answer DescribeLogDirs.
	Size int64
}

// TopicList is the topics page: the rows of one page after search and
// sort, and the form's state.
type TopicList struct {
	Rows       []TopicRow
	Query      string
	Sort       string
	Desc       bool
	Page       int
	Pages      int
	PerPage    int
	Total      int // topics matching the search
	All        int // topics in the cluster
	SizeErr    string
	Create     CreateForm
	CreateFail *Failure
	Deleted    string
}

// CreateForm is the create-topic form's values, kept when it fails.
type CreateForm struct {
	Name              string
	Partitions        string
	ReplicationFactor string
	Configs           string
}

// topicSorts are the columns the list sorts by (?sort=).
var topicSorts = []string{"name", "partitions", "replication", "size"}

const defaultPerPage = 50

// topics answers GET /topics?q=&sort=&desc=&page=&per=.
func (c *Console) topics(w http.ResponseWriter, r *http.Request) {
	c.renderTopics(w, r, http.StatusOK, CreateForm{Partitions: "1", ReplicationFactor: "-1"}, nil)
}

func (c *Console) renderTopics(w http.ResponseWriter, r *http.Request, status int, form CreateForm, createFail *Failure) {
	q := r.URL.Query()
	l := TopicList{Query: strings.TrimSpace(q.Get("q")), Sort: q.Get("sort"), Desc: q.Get("desc") == "1",
		PerPage: positive(q.Get("per"), defaultPerPage), Page: positive(q.Get("page"), 1), Create: form,
		CreateFail: createFail, Deleted: q.Get("deleted")}
	if !slices.Contains(topicSorts, l.Sort) {
		l.Sort = "name"
	}
	l.PerPage = min(l.PerPage, 1000)
	ctx, cancel := c.ctx(r)
	defer cancel()
	td, err := c.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Cannot list topics", err, "")
		return
	}
	l.All = len(td)
	sizes, err := c.topicSizes(r, nil)
	if err != nil {
		l.SizeErr = err.Error()
	}
	needle := strings.ToLower(l.Query)
	for name, t := range td {
		if needle != "" && !strings.Contains(strings.ToLower(name), needle) {
			continue
		}
		row := TopicRow{Name: name, Internal: t.IsInternal, Partitions: len(t.Partitions), Size: -1}
		for _, p := range t.Partitions {
			row.ReplicationFactor = max(row.ReplicationFactor, len(p.Replicas))
		}
		if sizes != nil {
			row.Size = sizes[name]
		}
		l.Rows = append(l.Rows, row)
	}
	sortTopics(l.Rows, l.Sort, l.Desc)
	l.Total = len(l.Rows)
	l.Pages = max(1, (l.Total+l.PerPage-1)/l.PerPage)
	l.Page = min(l.Page, l.Pages)
	from := (l.Page - 1) * l.PerPage
	l.Rows = l.Rows[from:min(from+l.PerPage, l.Total)]
	c.render(w, status, "topics", "Topics", "topics", l)
}

func sortTopics(rows []TopicRow, by string, desc bool) {
	key := func(a, b TopicRow) int {
		switch by {
		case "partitions":
			return a.Partitions - b.Partitions
		case "replication":
			return a.ReplicationFactor - b.ReplicationFactor
		case "size":
			return int(min(max(a.Size-b.Size, -1), 1))
		}
		return 0
	}
	sort.SliceStable(rows, func(i, j int) bool {
		k := key(rows[i], rows[j])
		if k == 0 {
			k = strings.Compare(rows[i].Name, rows[j].Name)
		}
		if desc {
			return k > 0
		}
		return k < 0
	})
}

// topicSizes sums DescribeLogDirs per topic, each partition counted once
// at its largest replica (a replica catching up holds less). topics nil:
// every topic.
func (c *Console) topicSizes(r *http.Request, topics kadm.TopicsSet) (map[string]int64, error) {
	sizes, err := c.partitionSizes(r, topics)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for t, ps := range sizes {
		for _, s := range ps {
			out[t] += s
		}
	}
	return out, nil
}

// partitionSizes is each partition's largest replica in bytes.
func (c *Console) partitionSizes(r *http.Request, topics kadm.TopicsSet) (map[string]map[int32]int64, error) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	dirs, err := c.adm.DescribeAllLogDirs(ctx, topics)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	var firstErr error
	for _, bd := range dirs {
		for _, d := range bd {
			if d.Err != nil && firstErr == nil {
				firstErr = fmt.Errorf("broker %d, %s: %w", d.Broker, d.Dir, d.Err)
			}
			for t, ps := range d.Topics {
				if out[t] == nil {
					out[t] = map[int32]int64{}
				}
				for p, dp := range ps {
					out[t][p] = max(out[t][p], dp.Size)
				}
			}
		}
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// createTopic answers POST /topics (name, partitions, replication_factor,
// configs as key=value lines): 303 to the new topic's page, or the topics
// page again with the form as it was and Kafka's error.
func (c *Console) createTopic(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "Cannot read the form", err, "")
		return
	}
	form := CreateForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Partitions: strings.TrimSpace(r.PostForm.Get("partitions")),
		ReplicationFactor: strings.TrimSpace(r.PostForm.Get("replication_factor")), Configs: r.PostForm.Get("configs")}
	refuse := func(status int, err error, hint string) {
		f := failureOf("The topic was not created", err, hint)
		c.renderTopics(w, r, status, form, &f)
	}
	partitions, err := formInt(form.Partitions, "partitions", -1, 1<<20)
	if err != nil {
		refuse(http.StatusBadRequest, err, "Partitions is a whole number, or -1 for the broker's num.partitions.")
		return
	}
	rf, err := formInt(form.ReplicationFactor, "replication factor", -1, 1<<15-1)
	if err != nil {
		refuse(http.StatusBadRequest, err, "Replication factor is a whole number, or -1 for the broker's default.replication.factor.")
		return
	}
	configs, err := parseConfigs(form.Configs)
	if err != nil {
		refuse(http.StatusBadRequest, err, "Write one key=value a line, such as retention.ms=86400000.")
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	resp, err := c.adm.CreateTopic(ctx, int32(partitions), int16(rf), configs, form.Name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		if resp.ErrMessage != "" {
			err = fmt.Errorf("%w: %s", err, resp.ErrMessage)
		}
		refuse(http.StatusBadRequest, err, "")
		return
	}
	c.log.Info("console: topic created", "topic", form.Name, "partitions", partitions, "replication.factor", rf)
	http.Redirect(w, r, "/topics/"+url.PathEscape(form.Name), http.StatusSeeOther)
}

// deleteTopic answers POST /topics/{topic}/delete with confirm=<the
// topic's name> (typed by the user, so one stray click deletes nothing):
// 303 to the list.
func (c *Console) deleteTopic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "Cannot read the form", err, "")
		return
	}
	if r.PostForm.Get("confirm") != name {
		c.fail(w, r, http.StatusBadRequest, "The topic "+name+" was not deleted", errors.New("the name typed to confirm is not the topic's"),
			"Type the topic's name exactly to confirm that it and all its records are to be deleted.")
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	resp, err := c.adm.DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		if resp.ErrMessage != "" {
			err = fmt.Errorf("%w: %s", err, resp.ErrMessage)
		}
		c.fail(w, r, http.StatusBadRequest, "The topic "+name+" was not deleted", err, "")
		return
	}
	c.log.Info("console: topic deleted", "topic", name)
	http.Redirect(w, r, "/topics?"+url.Values{"deleted": {name}}.Encode(), http.StatusSeeOther)
}

func formInt(s, what string, lo, hi int) (int, error) {
	if s == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi || n == 0 {
		return 0, fmt.Errorf("%s: %q is not a number from 1 to %d (or -1 for the broker's default)", what, s, hi)
	}
	return n, nil
}

// parseConfigs reads key=value lines (blank lines and # comments skipped).
func parseConfigs(s string) (map[string]*string, error) {
	out := map[string]*string{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("configs, line %d: %q is not key=value", i+1, line)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("configs, line %d: %s is set twice", i+1, k)
		}
		out[k] = &v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func positive(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return def
	}
	return n
}
