package rules

import (
	"testing"

	"github.com/vltava/vltava/internal/metadata"
)

func openTestLog(t *testing.T, dir string, opts metadata.LocalLogOptions) *metadata.LocalLog {
	t.Helper()
	l, err := metadata.OpenLocalLogWithOptions(dir, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustTopic(t *testing.T, img *metadata.Image, name string) *metadata.TopicImage {
	t.Helper()
	top, ok := img.Topic(name)
	if !ok {
		t.Fatalf("no topic %q", name)
	}
	return top
}
