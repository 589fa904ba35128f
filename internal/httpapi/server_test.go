package httpapi

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/testing/freeport"
)

type basicAuth struct{}

func (basicAuth) Authenticate(r *http.Request) (security.Principal, error) {
	u, p, ok := r.BasicAuth()
	if !ok || p != "secret" {
		return security.Principal{}, errors.New("bad credentials")
	}
	return security.User(u), nil
}

func listenerAt(t *testing.T) []config.HTTPListener {
	l, err := config.ParseHTTPListeners("http://" + freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func get(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServerMountsServesAndStops(t *testing.T) {
	s := New(Options{Service: "test", Listeners: listenerAt(t)})
	s.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, PrincipalOf(r).String())
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	url := "http://" + s.Addrs()[0].String()
	if code, body := get(t, url+"/hello", "", ""); code != 200 || body != "User:ANONYMOUS" {
		t.Fatalf("GET /hello = %d %q, want 200 User:ANONYMOUS", code, body)
	}
	if code, _ := get(t, url+"/missing", "", ""); code != 404 {
		t.Fatalf("GET /missing = %d, want 404", code)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/hello"); err == nil {
		t.Fatal("server still answers after Close")
	}
}

func TestServerAuthenticatorYieldsPrincipal(t *testing.T) {
	s := New(Options{Service: "test", Listeners: listenerAt(t), Authenticator: basicAuth{}})
	s.HandleFunc("GET /who", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, PrincipalOf(r).String())
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := "http://" + s.Addrs()[0].String() + "/who"
	if code, _ := get(t, url, "alice", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("bad credentials: %d, want 401", code)
	}
	if code, body := get(t, url, "alice", "secret"); code != 200 || body != "User:alice" {
		t.Fatalf("good credentials: %d %q, want 200 User:alice", code, body)
	}
}

func TestParseHTTPListenersSchemes(t *testing.T) {
	l, err := config.ParseHTTPListeners("http://127.0.0.1:9644, HTTPS://[::1]:9645")
	if err != nil || len(l) != 2 || l[0].Scheme != "http" || l[1].Scheme != "https" || l[1].Addr() != "[::1]:9645" {
		t.Fatalf("ParseHTTPListeners = %+v, %v", l, err)
	}
	for _, bad := range []string{"ftp://127.0.0.1:21", "127.0.0.1:9644", "http://127.0.0.1:9644/metrics"} {
		if _, err := config.ParseHTTPListeners(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if l, err := config.ParseHTTPListeners(""); err != nil || len(l) != 0 {
		t.Fatalf("empty: %v %v", l, err)
	}
}
