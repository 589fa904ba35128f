package streams

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Window is a time interval in ms since the epoch. Time windows are
// [Start, End); session windows are [Start, End], both ends being record
// timestamps.
type Window struct {
	Start int64 // ms since the epoch
	End   int64 // ms since the epoch
}

// Windowed is a key with the window of its aggregate (Kafka Streams'
// Windowed<K>).
type Windowed[K any] struct {
	Key    K      // the record key
	Window Window // the window the aggregate covers
}

func (w Windowed[K]) windowEnd() int64 { return w.Window.End }

// String renders "key@start/end", as Kafka Streams' Windowed.toString.
func (w Windowed[K]) String() string {
	return fmt.Sprintf("[%v@%d/%d]", w.Key, w.Window.Start, w.Window.End)
}

// TimeWindows are fixed-size windows: tumbling when Advance equals Size,
// hopping (overlapping) when smaller. A record belongs to every window
// [start, start+Size) containing its timestamp, with start a multiple of
// Advance. Records arriving after window end + Grace (in stream time) are
// late: dropped and counted.
type TimeWindows struct {
	Size    time.Duration // window length
	Advance time.Duration // hop between window starts; Size for tumbling windows
	Grace   time.Duration // how long after its end a window still takes records
}

// TimeWindowsOfSizeAndGrace returns tumbling windows of size with grace
// (Kafka Streams' TimeWindows.ofSizeAndGrace).
func TimeWindowsOfSizeAndGrace(size, grace time.Duration) TimeWindows {
	return TimeWindows{Size: size, Advance: size, Grace: grace}
}

// TimeWindowsOfSizeWithNoGrace returns tumbling windows of size, closing
// at their end (Kafka Streams' TimeWindows.ofSizeWithNoGrace).
func TimeWindowsOfSizeWithNoGrace(size time.Duration) TimeWindows {
	return TimeWindows{Size: size, Advance: size}
}

// AdvanceBy makes the windows hop by advance (0 < advance <= Size).
func (w TimeWindows) AdvanceBy(advance time.Duration) TimeWindows {
	w.Advance = advance
	return w
}

func (w TimeWindows) validate() error {
	if w.Size <= 0 || w.Advance <= 0 || w.Advance > w.Size || w.Grace < 0 {
		return fmt.Errorf("streams: TimeWindows size %v advance %v grace %v: want 0 < advance <= size, grace >= 0", w.Size, w.Advance, w.Grace)
	}
	if w.Size%time.Millisecond != 0 || w.Advance%time.Millisecond != 0 || w.Grace%time.Millisecond != 0 {
		return fmt.Errorf("streams: TimeWindows durations must be whole milliseconds")
	}
	return nil
}

// windowsFor lists the windows containing ts (Kafka Streams'
// TimeWindows.windowsFor).
func (w TimeWindows) windowsFor(ts int64) []Window {
	size, adv := w.Size.Milliseconds(), w.Advance.Milliseconds()
	start := max(0, ts-size+adv) / adv * adv
	var out []Window
	for ; start <= ts; start += adv {
		out = append(out, Window{Start: start, End: start + size})
	}
	return out
}

// SessionWindows group a key's records into sessions separated by gaps
// longer than InactivityGap; a record that bridges two sessions merges
// them. Sessions ending before stream time - Grace are closed.
type SessionWindows struct {
	InactivityGap time.Duration // the largest gap between a session's records
	Grace         time.Duration // how long after its end a session still takes records
}

// SessionWindowsOfInactivityGapAndGrace returns session windows (Kafka
// Streams' SessionWindows.ofInactivityGapAndGrace).
func SessionWindowsOfInactivityGapAndGrace(gap, grace time.Duration) SessionWindows {
	return SessionWindows{InactivityGap: gap, Grace: grace}
}

// SessionWindowsOfInactivityGapWithNoGrace returns session windows with no
// grace period.
func SessionWindowsOfInactivityGapWithNoGrace(gap time.Duration) SessionWindows {
	return SessionWindows{InactivityGap: gap}
}

// TimeWindowedSerde serializes Windowed[K] as Kafka Streams'
// TimeWindowedSerde does: the inner key then the window start (8 bytes,
// big-endian); the end is start + size.
func TimeWindowedSerde[K any](inner Serde[K], size time.Duration) Serde[Windowed[K]] {
	return timeWindowedSerde[K]{inner: inner, size: size.Milliseconds()}
}

type timeWindowedSerde[K any] struct {
	inner Serde[K]
	size  int64
}

func (s timeWindowedSerde[K]) Serialize(topic string, w Windowed[K]) ([]byte, error) {
	kb, err := s.inner.Serialize(topic, w.Key)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(append([]byte{}, kb...), uint64(w.Window.Start)), nil
}

func (s timeWindowedSerde[K]) Deserialize(topic string, b []byte) (Windowed[K], error) {
	if len(b) < 8 {
		return Windowed[K]{}, fmt.Errorf("streams: time-windowed key of %d bytes", len(b))
	}
	k, err := s.inner.Deserialize(topic, b[:len(b)-8])
	start := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
	return Windowed[K]{Key: k, Window: Window{Start: start, End: start + s.size}}, err
}

// SessionWindowedSerde serializes Windowed[K] as Kafka Streams'
// SessionWindowedSerde: the inner key, the end, then the start (8 bytes
// each, big-endian).
func SessionWindowedSerde[K any](inner Serde[K]) Serde[Windowed[K]] {
	return sessionWindowedSerde[K]{inner: inner}
}

type sessionWindowedSerde[K any] struct{ inner Serde[K] }

func (s sessionWindowedSerde[K]) Serialize(topic string, w Windowed[K]) ([]byte, error) {
	kb, err := s.inner.Serialize(topic, w.Key)
	if err != nil {
		return nil, err
	}
	out := binary.BigEndian.AppendUint64(append([]byte{}, kb...), uint64(w.Window.End))
	return binary.BigEndian.AppendUint64(out, uint64(w.Window.Start)), nil
}

func (s sessionWindowedSerde[K]) Deserialize(topic string, b []byte) (Windowed[K], error) {
	if len(b) < 16 {
		return Windowed[K]{}, fmt.Errorf("streams: session-windowed key of %d bytes", len(b))
	}
	k, err := s.inner.Deserialize(topic, b[:len(b)-16])
	end := int64(binary.BigEndian.Uint64(b[len(b)-16:]))
	start := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
	return Windowed[K]{Key: k, Window: Window{Start: start, End: end}}, err
}

// segmentInterval is Kafka Streams' choice for segmented stores:
// max(retention / 2, 60 s).
func segmentInterval(retention int64) int64 { return max(retention/2, 60_000) }
