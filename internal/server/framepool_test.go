package server

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFramePoolSizes(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, 4097, 1 << 20, 16 << 20, 16<<20 + 1} {
		b := getFrame(size)
		if len(b) != size {
			t.Fatalf("getFrame(%d) has length %d", size, len(b))
		}
		putFrame(b)
		if again := getFrame(size); len(again) != size {
			t.Fatalf("reused frame for %d has length %d", size, len(again))
		}
	}
}

func TestOnlyProduceFramesAreReused(t *testing.T) {
	frame := func(key kmsg.Key) []byte { return binary.BigEndian.AppendUint16(nil, uint16(key)) }
	if !reusableFrame(frame(kmsg.Produce)) {
		t.Fatal("produce frames must be reusable")
	}
	// The group coordinator keeps JoinGroup metadata and SyncGroup
	// assignments, which alias their frames.
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Fetch, kmsg.Metadata} {
		if reusableFrame(frame(k)) {
			t.Fatalf("%s frames must not be reused", k.Name())
		}
	}
}
