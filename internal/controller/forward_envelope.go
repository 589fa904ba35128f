package controller

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ForwardEnvelope forwards req to the active controller inside an Envelope
// (KIP-590) carrying the client's principal (Kafka's DefaultPrincipalData
// serialization) and address, so the controller authorizes the request as
// the client's, and returns the controller's answer to req. The inner
// request is sent with ForwardClientID, so the controller answers it
// rather than forwarding it again. Retried like Forward on NOT_CONTROLLER.
func (c *Client) ForwardEnvelope(ctx context.Context, req kmsg.Request, principal, clientHost []byte) (kmsg.Response, error) {
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(ForwardClientID)).AppendRequest(nil, req, 1)
	env := kmsg.NewPtrEnvelopeRequest()
	env.SetVersion(0)
	env.RequestData = frame[4:] // without the size prefix
	env.RequestPrincipal = principal
	env.ClientHostAddress = clientHost
	var out kmsg.Response
	err := c.call(ctx, nil, env, func(r kmsg.Response) error {
		er, ok := r.(*kmsg.EnvelopeResponse)
		if !ok {
			return fmt.Errorf("controller answered an Envelope with %T", r)
		}
		if err := kerr.ErrorForCode(er.ErrorCode); err != nil {
			return err
		}
		inner, err := DecodeEnvelopedResponse(req, er.ResponseData)
		if err != nil {
			return err
		}
		if hasNotController(inner) {
			return kerr.NotController
		}
		out = inner
		return nil
	})
	return out, err
}

// DecodeEnvelopedResponse decodes an Envelope's response data (response
// header and body) as the response to req.
func DecodeEnvelopedResponse(req kmsg.Request, data []byte) (kmsg.Response, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("enveloped %s response of %d bytes", kmsg.NameForKey(req.Key()), len(data))
	}
	if corr := int32(binary.BigEndian.Uint32(data)); corr != 1 {
		return nil, fmt.Errorf("enveloped response has correlation id %d, want 1", corr)
	}
	body := data[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding enveloped %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}
