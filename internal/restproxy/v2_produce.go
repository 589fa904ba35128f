package restproxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// POST /topics/{topic} and POST /topics/{topic}/partitions/{partition}
//
// The embedded format comes from the Content-Type,
// application/vnd.kafka.{binary,json,avro,jsonschema,protobuf}.v2+json
// (binary when it names none: application/vnd.kafka.v2+json or
// application/json). The response has one offset per record in the
// request's order, each with its error if it failed.

// v2ProduceRequest is v2's produce body.
type v2ProduceRequest struct {
	Records []struct {
		Key       json.RawMessage `json:"key"`
		Value     json.RawMessage `json:"value"`
		Partition *int32          `json:"partition"`
	} `json:"records"`
	KeySchema     *string `json:"key_schema"`
	KeySchemaID   *int    `json:"key_schema_id"`
	ValueSchema   *string `json:"value_schema"`
	ValueSchemaID *int    `json:"value_schema_id"`
}

// v2Offset is one record's result.
type v2Offset struct {
	Partition *int32  `json:"partition"`
	Offset    *int64  `json:"offset"`
	ErrorCode *int    `json:"error_code"`
	Error     *string `json:"error"`
}

func (p *Proxy) routesV2Produce() {
	p.v2("POST /topics/{topic}", p.v2Produce)
	p.v2("POST /topics/{topic}/partitions/{partition}", p.v2Produce)
}

// v2Format is the embedded format a v2 content type names, "" if the
// content type is not one of v2's.
func v2Format(mt string) string {
	switch mt {
	case "application/vnd.kafka.v2+json", "application/vnd.kafka+json", "application/json", "application/vnd.kafka.binary.v2+json":
		return fmtBinary
	case "application/vnd.kafka.json.v2+json":
		return fmtJSON
	case "application/vnd.kafka.avro.v2+json":
		return fmtAvro
	case "application/vnd.kafka.jsonschema.v2+json":
		return fmtJSONSchema
	case "application/vnd.kafka.protobuf.v2+json":
		return fmtProtobuf
	}
	return ""
}

func (p *Proxy) v2Produce(w http.ResponseWriter, r *http.Request) error {
	format := v2Format(mediaType(r))
	if format == "" {
		return bareErr(http.StatusUnsupportedMediaType, "HTTP 415 Unsupported Media Type: %q", r.Header.Get("Content-Type"))
	}
	c, err := p.clients.get(r)
	if err != nil {
		return err
	}
	topic := r.PathValue("topic")
	td, err := describeTopic(r, c, topic)
	if err != nil {
		return err
	}
	var fixed *int32
	if r.PathValue("partition") != "" {
		id, err := intPath(r, "partition", errPartitionNotFound())
		if err != nil {
			return err
		}
		if _, ok := td.Partitions[id]; !ok {
			return errPartitionNotFound()
		}
		fixed = &id
	}
	var req v2ProduceRequest
	if err := readBody(r, p.cfg.MaxRequestBytes, &req); err != nil {
		return err
	}
	if len(req.Records) == 0 {
		return errPayload("records: at least one record is required.")
	}
	cx, cancel := ctx(r)
	defer cancel()
	spec := func(raw json.RawMessage, schema *string, id *int) *dataSpec {
		if raw == nil {
			return nil
		}
		return &dataSpec{Type: format, Schema: schema, SchemaID: id, Data: raw}
	}
	var keyID, valID *int
	recs := make([]*kgo.Record, len(req.Records))
	for i, rr := range req.Records {
		if isSchemaFormat(format) {
			if !isNull(rr.Key) && req.KeySchema == nil && req.KeySchemaID == nil {
				return errf(codeKeySchemaMissing, "Request includes keys but does not include key schema")
			}
			if !isNull(rr.Value) && req.ValueSchema == nil && req.ValueSchemaID == nil {
				return errf(codeValueSchemaMissing, "Request includes values but does not include value schema")
			}
		}
		var ks, vs *dataSpec
		if !isNull(rr.Key) {
			ks = spec(rr.Key, req.KeySchema, req.KeySchemaID)
		}
		if !isNull(rr.Value) {
			vs = spec(rr.Value, req.ValueSchema, req.ValueSchemaID)
		}
		key, err := p.encodeData(cx, topic, true, ks)
		if err != nil {
			return err
		}
		val, err := p.encodeData(cx, topic, false, vs)
		if err != nil {
			return err
		}
		if key.schemaID != nil {
			keyID = key.schemaID
			req.KeySchemaID, req.KeySchema = key.schemaID, nil // registered once
		}
		if val.schemaID != nil {
			valID = val.schemaID
			req.ValueSchemaID, req.ValueSchema = val.schemaID, nil
		}
		rec := &kgo.Record{Topic: topic, Key: key.bytes, Value: val.bytes}
		part := rr.Partition
		if fixed != nil {
			part = fixed
		}
		if part != nil {
			if _, ok := td.Partitions[*part]; !ok {
				return errPartitionNotFound()
			}
			rec.Partition, rec.Context = *part, explicitPartition
		}
		recs[i] = rec
	}
	offsets := make([]v2Offset, len(recs))
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for i, rec := range recs {
		c.kgo.Produce(cx, rec, func(rec *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				ae := kafkaErr(err)
				code, msg := ae.code, ae.msg
				if code != codeKafkaRetriable {
					code = codeKafkaError
					if ae.code == codeForbidden {
						code = codeForbidden
					}
				}
				offsets[i] = v2Offset{ErrorCode: &code, Error: &msg}
				return
			}
			part, off := rec.Partition, rec.Offset
			offsets[i] = v2Offset{Partition: &part, Offset: &off}
		})
	}
	wg.Wait()
	// An authorization failure of every record is the request's.
	denied := 0
	for _, o := range offsets {
		if o.ErrorCode != nil && *o.ErrorCode == codeForbidden {
			denied++
		}
	}
	if denied == len(offsets) {
		return errf(codeForbidden, "%s", strings.TrimSpace(*offsets[0].Error))
	}
	writeJSON(w, http.StatusOK, contentTypeV2, map[string]any{"key_schema_id": keyID, "value_schema_id": valID, "offsets": offsets})
	return nil
}
