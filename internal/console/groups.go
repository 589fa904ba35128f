package console

import (
	"errors"
	"net/http"
	"sort"
	"strings"
)

// GroupRow is one line of the groups list.
type GroupRow struct {
	Name         string
	State        string
	ProtocolType string
	Coordinator  int32
}

// GroupList is the groups page.
type GroupList struct {
	Rows  []GroupRow
	Query string
}

// groups answers GET /groups?q=: ListGroups (every coordinator) and the
// state each reports.
func (c *Console) groups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	l := GroupList{Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	lg, err := c.adm.ListGroups(ctx)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Cannot list consumer groups", err, "")
		return
	}
	needle := strings.ToLower(l.Query)
	for _, g := range lg.Sorted() {
		if needle != "" && !strings.Contains(strings.ToLower(g.Group), needle) {
			continue
		}
		l.Rows = append(l.Rows, GroupRow{Name: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	c.render(w, http.StatusOK, "groups", "Consumer groups", "groups", l)
}

// GroupPage is one group: its members and, per partition it committed to
// or is assigned, the committed offset, the end offset and the lag.
type GroupPage struct {
	Name        string
	State       string
	Protocol    string
	Coordinator int32
	Members     []MemberRow
	Lags        []LagRow
	TotalLag    int64
}

// MemberRow is one member and its assignment.
type MemberRow struct {
	ID         string
	InstanceID string
	ClientID   string
	Host       string
	Assigned   []string // topic: partitions
}

// LagRow is one partition's committed offset and lag.
type LagRow struct {
	Topic     string
	Partition int32
	Member    string
	Committed int64 // -1: no commit
	End       int64
	Lag       int64 // -1 when unknown
	Err       string
}

// group answers GET /groups/{group}: kadm's Lag, which describes the
// group, fetches its commits and lists the end offsets of every partition
// it commits to or is assigned.
func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("group")
	ctx, cancel := c.ctx(r)
	defer cancel()
	lags, err := c.adm.Lag(ctx, name)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "Group "+name, err, "")
		return
	}
	gl, ok := lags[name]
	if !ok {
		c.fail(w, r, http.StatusNotFound, "Group "+name, errGroupMissing, "")
		return
	}
	if err := gl.Error(); err != nil {
		c.fail(w, r, http.StatusBadGateway, "Group "+name, err, "")
		return
	}
	g := GroupPage{Name: name, State: gl.State, Protocol: gl.Protocol, Coordinator: gl.Coordinator.NodeID}
	for _, m := range gl.Members {
		row := MemberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			row.InstanceID = *m.InstanceID
		}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				parts := make([]int32, len(t.Partitions))
				copy(parts, t.Partitions)
				sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
				row.Assigned = append(row.Assigned, t.Topic+": "+joinInt32s(parts))
			}
			sort.Strings(row.Assigned)
		}
		g.Members = append(g.Members, row)
	}
	for _, l := range gl.Lag.Sorted() {
		row := LagRow{Topic: l.Topic, Partition: l.Partition, Committed: l.Commit.At, End: l.End.Offset, Lag: l.Lag}
		if l.Member != nil {
			row.Member = l.Member.MemberID
		}
		if l.Err != nil {
			row.Err = l.Err.Error()
		}
		if row.Lag > 0 {
			g.TotalLag += row.Lag
		}
		g.Lags = append(g.Lags, row)
	}
	c.render(w, http.StatusOK, "group", "Group "+name, "groups", g)
}

var errGroupMissing = errors.New("the coordinator did not answer for this group")
