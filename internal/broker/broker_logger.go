package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/server"
)

// LoggerLevels is what the broker-logger configs read and change: the
// node's loggers and their levels (internal/logging.Levels).
type LoggerLevels interface {
	Names() []string
	Has(name string) bool
	Level(name string) string
	Set(name, level string) error
	Reset(name string) error
}

// Broker-logger configs (resource type BROKER_LOGGER, 8): Kafka's
// DescribeConfigs lists every log4j logger of the named broker with its
// level, and IncrementalAlterConfigs SETs or DELETEs (back to root's) a
// logger's level on that broker alone, at once, without the controller:
// KRaft brokers handle these resources themselves rather than forwarding.

// checkLoggerResource accepts this broker's id only.
func (b *Broker) checkLoggerResource(name string) error {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 {
		return fmt.Errorf("%w: broker logger resource name %q is not a broker id", kerr.InvalidRequest, name)
	}
	if int32(id) != b.nodeID {
		return fmt.Errorf("%w: broker %d is not this broker (%d)", kerr.InvalidRequest, id, b.nodeID)
	}
	return nil
}

func (b *Broker) describeBrokerLoggers(name string) ([]config.Entry, error) {
	if b.loggers == nil {
		return nil, fmt.Errorf("%w: broker logger configs are not supported by this broker's logger", kerr.InvalidRequest)
	}
	if err := b.checkLoggerResource(name); err != nil {
		return nil, err
	}
	var out []config.Entry
	for _, n := range b.loggers.Names() {
		out = append(out, config.Entry{Name: n, Value: b.loggers.Level(n), HasValue: true,
			Source: config.SourceDynamicBrokerLoggerConfig, Type: config.String})
	}
	return out, nil
}

// alterBrokerLoggers applies one BROKER_LOGGER resource of an
// IncrementalAlterConfigs request: every change is checked before any is
// made, as Kafka validates the whole resource first.
func (b *Broker) alterBrokerLoggers(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if b.loggers == nil {
		return fmt.Errorf("%w: broker logger configs are not supported by this broker's logger", kerr.InvalidRequest)
	}
	if err := b.checkLoggerResource(rr.ResourceName); err != nil {
		return err
	}
	for _, c := range rr.Configs {
		switch c.Op {
		case opSet:
			if !b.loggers.Has(c.Name) {
				return fmt.Errorf("%w: logger %s does not exist", kerr.InvalidConfig, c.Name)
			}
			if c.Value == nil {
				return fmt.Errorf("%w: no level given for logger %s", kerr.InvalidConfig, c.Name)
			}
			if _, ok := logLevelValid(*c.Value); !ok {
				return fmt.Errorf("%w: cannot set the log level of %s to %s: valid levels are TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF", kerr.InvalidConfig, c.Name, *c.Value)
			}
		case opDelete:
			if c.Name == "root" {
				return fmt.Errorf("%w: removing the log level of the root logger is not allowed", kerr.InvalidRequest)
			}
			if !b.loggers.Has(c.Name) {
				return fmt.Errorf("%w: logger %s does not exist", kerr.InvalidConfig, c.Name)
			}
		default:
			return fmt.Errorf("%w: operation %d is not allowed for the BROKER_LOGGER resource", kerr.InvalidRequest, c.Op)
		}
	}
	if validateOnly {
		return nil
	}
	for _, c := range rr.Configs {
		var err error
		if c.Op == opSet {
			err = b.loggers.Set(c.Name, *c.Value)
		} else {
			err = b.loggers.Reset(c.Name)
		}
		if err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
		b.log.Info("logger level changed", "logger", c.Name, "level", b.loggers.Level(c.Name))
	}
	return nil
}

func logLevelValid(s string) (string, bool) {
	switch s {
	case "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF":
		return s, true
	}
	return "", false
}

// splitLoggerResources answers an IncrementalAlterConfigs request's
// BROKER_LOGGER resources here and forwards the rest (if any) to the
// controller, merging the answers in request order. ok is false when the
// request has no logger resource or is not to be forwarded.
func (b *Broker) splitLoggerResources(ctx context.Context, r *server.Request) (kmsg.Response, bool) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	var loggers, others int
	for _, rr := range req.Resources {
		if rr.ResourceType == resourceBrokerLogger {
			loggers++
		} else {
			others++
		}
	}
	if loggers == 0 || b.controllerIsLocal() {
		return nil, false
	}
	var forwarded *kmsg.IncrementalAlterConfigsResponse
	if others > 0 {
		rest := *req
		rest.Resources = nil
		for _, rr := range req.Resources {
			if rr.ResourceType != resourceBrokerLogger {
				rest.Resources = append(rest.Resources, rr)
			}
		}
		r2 := *r
		r2.Body = &rest
		resp, ok := b.forwardToController(ctx, &r2)
		if !ok {
			return nil, false
		}
		forwarded, _ = resp.(*kmsg.IncrementalAlterConfigsResponse)
	}
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	next := 0
	for _, rr := range req.Resources {
		if rr.ResourceType != resourceBrokerLogger {
			if forwarded != nil && next < len(forwarded.Resources) {
				resp.Resources = append(resp.Resources, forwarded.Resources[next])
			} else {
				sr := kmsg.NewIncrementalAlterConfigsResponseResource()
				sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, kerr.UnknownServerError.Code
				resp.Resources = append(resp.Resources, sr)
			}
			next++
			continue
		}
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if err := b.alterBrokerLoggers(rr, req.ValidateOnly); err != nil {
			sr.ErrorCode, sr.ErrorMessage = b.errCode(err), errMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, true
}
