package lag

import (
	"encoding/json"
	"net/http"
)

// Response is the body of GET /v1/consumer-lag.
type Response struct {
	Groups []GroupLag `json:"groups"`
}

// Handler serves /v1/consumer-lag: every group coordinated here with its
// partitions' offsets, lag, time lag and Burrow status, or one group with
// ?group=<id> (404 when this broker does not coordinate it).
func (e *Evaluator) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		groups := e.Current()
		if id := r.URL.Query().Get("group"); id != "" {
			var one []GroupLag
			for _, g := range groups {
				if g.Group == id {
					one = append(one, g)
				}
			}
			if len(one) == 0 {
				http.Error(w, "group not found on this broker", http.StatusNotFound)
				return
			}
			groups = one
		}
		if groups == nil {
			groups = []GroupLag{}
		}
		for i := range groups {
			if groups[i].Partitions == nil {
				groups[i].Partitions = []PartitionLag{}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Response{Groups: groups})
	})
}
