package rules

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// TestAlterGroupConfigs: GROUP configs (KIP-848) are stored as ConfigRecords
// of resource type 32 for any group id, existing or not, after the
// complete set passes the group validation hook, as Kafka's controller
// does.
func TestAlterGroupConfigs(t *testing.T) {
	c, _ := newTestController(t, 1, ControllerConfig{
		ValidateGroupConfigs: func(cfg map[string]string) error {
			if cfg["consumer.session.timeout.ms"] == "1" {
				return fmt.Errorf("%w: consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms", kerr.InvalidConfig)
			}
			return nil
		},
	})
	ctx := context.Background()
	group := func(name string, v *string) ConfigChange {
		return ConfigChange{ResourceType: metadata.ConfigResourceGroup, ResourceName: "not-yet", Name: name, Value: v}
	}
	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{group("consumer.session.timeout.ms", metadata.StringPtr("50000"))}, false), nil)
	if got := c.Image().GroupConfig("not-yet"); !reflect.DeepEqual(got, map[string]string{"consumer.session.timeout.ms": "50000"}) {
		t.Fatalf("group config %v", got)
	}
	before := c.Image().Offset()
	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{group("consumer.session.timeout.ms", metadata.StringPtr("1"))}, false), kerr.InvalidConfig)
	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{{ResourceType: metadata.ConfigResourceGroup, Name: "consumer.session.timeout.ms", Value: metadata.StringPtr("50000")}}, false), kerr.InvalidRequest)
	if c.Image().Offset() != before {
		t.Fatal("rejected change committed")
	}
	wantKafkaError(t, c.AlterConfigs(ctx, []ConfigChange{group("consumer.session.timeout.ms", nil)}, false), nil)
	if got := c.Image().GroupConfigs(); len(got) != 0 {
		t.Fatalf("after delete %v", got)
	}
}
