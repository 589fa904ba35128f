package quota

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// quotasOf applies records setting key on each entity to an empty image.
func quotasOf(t *testing.T, set map[metadata.QuotaEntity]float64, key string) *metadata.ClientQuotas {
	t.Helper()
	var recs []metadata.Record
	for e, v := range set {
		recs = append(recs, &metadata.ClientQuotaRecord{Entity: e.Data(), Key: key, Value: v})
	}
	img, err := metadata.EmptyImage().Apply(int64(len(recs)), recs)
	if err != nil {
		t.Fatal(err)
	}
	return img.ClientQuotas()
}

// TestPrecedence: with all eight levels set, each to its own level number,
// removing the most specific one in turn reveals the next, and each level
// measures under Kafka's metric tags.
func TestPrecedence(t *testing.T) {
	const user, client = "alice", "app"
	set := map[metadata.QuotaEntity]float64{}
	for l := Level(1); l <= 8; l++ {
		set[levelEntity(l, user, client)] = float64(l)
	}
	// Entities of other users and clients never apply.
	set[metadata.QuotaEntity{User: metadata.QuotaName("bob")}] = 100
	set[metadata.QuotaEntity{ClientID: metadata.QuotaName("other")}] = 100
	set[metadata.QuotaEntity{User: metadata.QuotaName(user), ClientID: metadata.QuotaName("other")}] = 100
	wantKey := map[Level]SensorKey{
		1: {user, client}, 2: {user, client}, 3: {User: user},
		4: {user, client}, 5: {user, client}, 6: {User: user},
		7: {ClientID: client}, 8: {ClientID: client},
	}
	for l := Level(1); l <= 8; l++ {
		q := quotasOf(t, set, ProducerByteRate)
		limit, level, sk, ok := Resolve(q, ProducerByteRate, user, client)
		if !ok || level != l || limit != float64(l) || sk != wantKey[l] {
			t.Fatalf("level %d: got limit %v level %d key %+v ok %v", l, limit, level, sk, ok)
		}
		if _, _, _, ok := Resolve(q, ConsumerByteRate, user, client); ok {
			t.Fatalf("level %d: a key no entity sets resolved", l)
		}
		delete(set, levelEntity(l, user, client))
	}
	if _, _, _, ok := Resolve(quotasOf(t, set, ProducerByteRate), ProducerByteRate, user, client); ok {
		t.Fatal("resolved with no level set")
	}
}

// TestPrecedenceDefaultsAreNotNames: the default entity is not a user or
// client id named "<default>", and the anonymous principal's name is a
// user name like any other.
func TestPrecedenceDefaultsAreNotNames(t *testing.T) {
	q := quotasOf(t, map[metadata.QuotaEntity]float64{
		{User: metadata.QuotaName("<default>")}: 1,
		{User: metadata.QuotaName("ANONYMOUS")}: 2,
	}, ProducerByteRate)
	if _, _, _, ok := Resolve(q, ProducerByteRate, "alice", "c"); ok {
		t.Fatal(`a user named "<default>" applied to alice`)
	}
	if v, _, _, _ := Resolve(q, ProducerByteRate, "ANONYMOUS", "c"); v != 2 {
		t.Fatalf("ANONYMOUS got %v", v)
	}
}

func TestResolveIP(t *testing.T) {
	q := quotasOf(t, map[metadata.QuotaEntity]float64{
		{IP: metadata.QuotaName("10.0.0.1")}: 3,
		{IP: metadata.QuotaDefault}:          7,
	}, ConnectionCreationRate)
	if v, ok := ResolveIP(q, "10.0.0.1"); !ok || v != 3 {
		t.Fatalf("own ip: %v %v", v, ok)
	}
	if v, ok := ResolveIP(q, "10.0.0.2"); !ok || v != 7 {
		t.Fatalf("default ip: %v %v", v, ok)
	}
}

// TestRateWindows follows Kafka's Rate: the first bytes are spread over at
// least samples-1 windows, samples roll as time passes, and expire after
// the whole window.
func TestRateWindows(t *testing.T) {
	w := Window{Samples: 11, Size: time.Second}
	r := newRate(w)
	t0 := time.Unix(1000, 0)
	r.record(1000, t0)
	if got := r.measure(t0); got != 100 {
		t.Fatalf("first record: rate %v, want 1000 over 10 s", got)
	}
	// 15 s of 100 B/s, recorded every 100 ms: the rate converges to 100
	// once the first burst expires.
	for i := 1; i <= 150; i++ {
		r.record(10, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	now := t0.Add(15 * time.Second)
	if got := r.measure(now); got < 95 || got > 105 {
		t.Fatalf("steady rate %v, want about 100", got)
	}
	if got := r.windowSize(now); got < 10*time.Second || got > 11*time.Second {
		t.Fatalf("window %v, want between 10 s and 11 s", got)
	}
	// Idle for longer than the window: everything expired.
	if got := r.measure(now.Add(12 * time.Second)); got != 0 {
		t.Fatalf("after idling: rate %v", got)
	}
}

// TestThrottleTime is Kafka's QuotaUtils.throttleTime: (value - bound) /
// bound × window, capped at the whole window.
func TestThrottleTime(t *testing.T) {
	max := 11 * time.Second
	for _, c := range []struct {
		value, bound float64
		window, want time.Duration
	}{
		{100, 100, 10 * time.Second, 0},
		{99, 100, 10 * time.Second, 0},
		{150, 100, 10 * time.Second, 5 * time.Second},
		{110, 100, 10 * time.Second, time.Second},
		{200, 100, 10500 * time.Millisecond, 10500 * time.Millisecond},
		{1000, 100, 10 * time.Second, max},
		{1, 0, 10 * time.Second, max},
	} {
		if got := throttleTime(c.value, c.bound, c.window, max); got != c.want {
			t.Errorf("throttleTime(%v, %v, %v) = %v, want %v", c.value, c.bound, c.window, got, c.want)
		}
	}
}

// TestManagerRecord: a client over its producer quota is throttled for
// the time Kafka computes; other clients and kinds are not measured; a
// change of quota in the image applies at once.
func TestManagerRecord(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewManager(Config{Window: DefaultWindow, ControllerWindow: DefaultWindow, Now: func() time.Time { return now }})
	q := quotasOf(t, map[metadata.QuotaEntity]float64{{ClientID: metadata.QuotaDefault}: 100}, ProducerByteRate)
	m.Sync(q)
	if m.Enabled(Fetch) || !m.Enabled(Produce) {
		t.Fatal("Enabled wrong")
	}
	if d := m.Record(Produce, "ANONYMOUS", "a", 1000); d != 0 {
		t.Fatalf("1000 B over 10 s at 100 B/s: throttled %v", d)
	}
	// 2000 B over 10 s is 200 B/s: (200-100)/100 × 10 s.
	if d := m.Record(Produce, "ANONYMOUS", "a", 1000); d != 10*time.Second {
		t.Fatalf("throttle %v, want 10s", d)
	}
	// The default client-id quota is per client id: b has its own.
	if d := m.Record(Produce, "ANONYMOUS", "b", 1000); d != 0 {
		t.Fatalf("client b throttled %v", d)
	}
	if d := m.Record(Fetch, "ANONYMOUS", "a", 1e9); d != 0 {
		t.Fatalf("no fetch quota, throttled %v", d)
	}
	m.Sync(quotasOf(t, map[metadata.QuotaEntity]float64{{ClientID: metadata.QuotaDefault}: 1e6}, ProducerByteRate))
	if d := m.Record(Produce, "ANONYMOUS", "a", 1); d != 0 {
		t.Fatalf("after raising the quota: throttled %v", d)
	}
	m.Sync(nil)
	if m.Enabled(Produce) {
		t.Fatal("quota removed but still enabled")
	}
}

// TestMutationQuota is KIP-599's token bucket: a burst of the whole
// window's worth is allowed, the debt beyond it is the throttle, and a
// strict request is refused while in debt.
func TestMutationQuota(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewManager(Config{Window: DefaultWindow, ControllerWindow: DefaultWindow, Now: func() time.Time { return now }})
	m.Sync(quotasOf(t, map[metadata.QuotaEntity]float64{{User: metadata.QuotaDefault}: 2}, ControllerMutationRate))
	if ok, _ := m.MutationAllowed("u", "c"); !ok {
		t.Fatal("fresh bucket refused")
	}
	if d := m.RecordMutations("u", "c", 22); d != 0 { // burst 2/s × 11 s
		t.Fatalf("burst throttled %v", d)
	}
	if d := m.RecordMutations("u", "c", 4); d != 2*time.Second {
		t.Fatalf("debt of 4 at 2/s: throttle %v", d)
	}
	if ok, d := m.MutationAllowed("u", "c"); ok || d != 2*time.Second {
		t.Fatalf("in debt: allowed %v, %v", ok, d)
	}
	now = now.Add(2 * time.Second)
	if ok, _ := m.MutationAllowed("u", "c"); !ok {
		t.Fatal("debt repaid, still refused")
	}
}

func TestValidate(t *testing.T) {
	name := func(s string) *string { return &s }
	bad := [][]metadata.QuotaEntityData{
		nil,
		{{EntityType: "group", EntityName: name("g")}},
		{{EntityType: "user", EntityName: name("")}},
		{{EntityType: "user", EntityName: name("a")}, {EntityType: "user", EntityName: name("b")}},
		{{EntityType: "ip", EntityName: name("not-an-ip")}},
		{{EntityType: "ip", EntityName: name("10.0.0.1")}, {EntityType: "user", EntityName: name("a")}},
	}
	for _, d := range bad {
		if _, err := ValidateEntity(d); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("entity %v: %v, want INVALID_REQUEST", d, err)
		}
	}
	user, _ := ValidateEntity([]metadata.QuotaEntityData{{EntityType: "user", EntityName: nil}})
	ip, _ := ValidateEntity([]metadata.QuotaEntityData{{EntityType: "ip", EntityName: name("::1")}})
	v := func(f float64) *float64 { return &f }
	for _, c := range []struct {
		e   metadata.QuotaEntity
		key string
		val *float64
		ok  bool
	}{
		{user, ProducerByteRate, v(1024), true},
		{user, ProducerByteRate, v(10.5), false},
		{user, RequestPercentage, v(10.5), true},
		{user, ControllerMutationRate, v(0.5), true},
		{user, ConnectionCreationRate, v(5), false},
		{user, "SCRAM-SHA-256", v(5), false},
		{user, "nonsense", nil, true},
		{ip, ConnectionCreationRate, v(5), true},
		{ip, ConnectionCreationRate, v(5.5), false},
		{ip, ConnectionCreationRate, v(1 << 40), false},
		{user, ProducerByteRate, v(0), false},
		{user, RequestPercentage, v(-1), false},
		{ip, ProducerByteRate, v(5), false},
	} {
		err := ValidateKeyValue(c.e, c.key, c.val)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%v %s: %v", c.e, c.key, err)
		}
	}
}

// TestConnectionRates: an address gets its own quota or the default ip
// quota; over it, connections are refused and not counted.
func TestConnectionRates(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewConnectionRates(DefaultWindow, func() time.Time { return now })
	if d := r.Admit("10.0.0.1"); d != 0 {
		t.Fatalf("no quota: %v", d)
	}
	r.Sync(quotasOf(t, map[metadata.QuotaEntity]float64{
		{IP: metadata.QuotaName("10.0.0.1")}: 1,
		{IP: metadata.QuotaDefault}:          100,
	}, ConnectionCreationRate))
	// 1/s over the 10 s minimum window: 10 connections at once pass.
	for i := range 10 {
		if d := r.Admit("10.0.0.1"); d != 0 {
			t.Fatalf("connection %d refused for %v", i+1, d)
		}
	}
	if d := r.Admit("10.0.0.1"); d <= 0 {
		t.Fatal("the 11th connection within a second passed")
	}
	if d := r.Admit("10.0.0.2"); d != 0 {
		t.Fatalf("another address (default quota) refused: %v", d)
	}
	// The ten stay in the window until their sample expires.
	now = now.Add(2 * time.Second)
	if d := r.Admit("10.0.0.1"); d <= 0 {
		t.Fatal("after 2 s: passed, but ten connections are still in the window")
	}
	now = now.Add(10 * time.Second)
	if d := r.Admit("10.0.0.1"); d != 0 {
		t.Fatalf("after the window: refused for %v", d)
	}
}
