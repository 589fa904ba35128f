package streams

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Serde turns values of type T into record bytes and back, like Kafka
// Streams' Serde<T>. A nil byte slice is a null (tombstone): Serialize of a
// value never returns nil, and Deserialize is never called with nil (the
// runtime passes the record on as a null instead).
type Serde[T any] interface {
	// Serialize encodes v for topic.
	Serialize(topic string, v T) ([]byte, error)
	// Deserialize decodes b, read from topic.
	Deserialize(topic string, b []byte) (T, error)
}

type stringSerde struct{}

// String is the UTF-8 string serde (Kafka's Serdes.String()).
func String() Serde[string] { return stringSerde{} }

func (stringSerde) Serialize(_ string, v string) ([]byte, error) {
	return append([]byte{}, v...), nil
}
func (stringSerde) Deserialize(_ string, b []byte) (string, error) { return string(b), nil }

type bytesSerde struct{}

// Bytes passes bytes through unchanged (Kafka's Serdes.ByteArray()).
func Bytes() Serde[[]byte] { return bytesSerde{} }

func (bytesSerde) Serialize(_ string, v []byte) ([]byte, error) {
	if v == nil {
		return []byte{}, nil
	}
	return v, nil
}
func (bytesSerde) Deserialize(_ string, b []byte) ([]byte, error) { return b, nil }

type int64Serde struct{}

// Int64 is the 8-byte big-endian integer serde (Kafka's Serdes.Long()).
func Int64() Serde[int64] { return int64Serde{} }

func (int64Serde) Serialize(_ string, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}
func (int64Serde) Deserialize(topic string, b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("streams: Int64 serde: %d bytes from %q, want 8", len(b), topic)
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

type int32Serde struct{}

// Int32 is the 4-byte big-endian integer serde (Kafka's Serdes.Integer()).
func Int32() Serde[int32] { return int32Serde{} }

func (int32Serde) Serialize(_ string, v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(nil, uint32(v)), nil
}
func (int32Serde) Deserialize(topic string, b []byte) (int32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("streams: Int32 serde: %d bytes from %q, want 4", len(b), topic)
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

type jsonSerde[T any] struct{}

// JSON encodes T with encoding/json.
func JSON[T any]() Serde[T] { return jsonSerde[T]{} }

func (jsonSerde[T]) Serialize(_ string, v T) ([]byte, error) { return json.Marshal(v) }
func (jsonSerde[T]) Deserialize(_ string, b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// defaultSerde is the serde used where an operator needs one and none was
// given: the fixed-width or raw serde for the basic types, JSON otherwise
// (the role of Kafka Streams' default.key.serde / default.value.serde).
func defaultSerde[T any]() Serde[T] {
	var zero T
	var s any
	switch any(zero).(type) {
	case string:
		s = String()
	case []byte:
		s = Bytes()
	case int64:
		s = Int64()
	case int32:
		s = Int32()
	default:
		s = JSON[T]()
	}
	return s.(Serde[T])
}

// anySerde erases a Serde's type for the untyped topology graph.
type anySerde struct {
	ser func(topic string, v any) ([]byte, error)
	de  func(topic string, b []byte) (any, error)
}

func eraseSerde[T any](s Serde[T]) anySerde {
	return anySerde{
		ser: func(topic string, v any) ([]byte, error) {
			if v == nil {
				return nil, nil
			}
			return s.Serialize(topic, v.(T))
		},
		de: func(topic string, b []byte) (any, error) {
			if b == nil {
				return nil, nil
			}
			return s.Deserialize(topic, b)
		},
	}
}
