package sqlserver

import "testing"

func TestServersStartAndAnswer(t *testing.T) {
	for _, start := range []func(testing.TB, ...Options) *Server{Postgres, MariaDB} {
		s := start(t)
		var n int
		if err := s.DB(t).QueryRow("SELECT 1+1").Scan(&n); err != nil || n != 2 {
			t.Fatalf("%s: %d %v", s.Driver, n, err)
		}
		s.Stop()
	}
}
