package broker

// AlterUserScramCredentials (key 51), v0 (KIP-554).
//
// Upserts and deletes SCRAM credentials on the active controller (brokers
// forward the request, KIP-590); rules.Controller.AlterUserScramCredentials
// validates each user as Kafka's ScramControlManager: an empty name or too
// few/many iterations is UNACCEPTABLE_CREDENTIAL, an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM, the same user and mechanism twice
// DUPLICATE_RESOURCE, deleting a missing credential RESOURCE_NOT_FOUND. One
// result per user. The answer comes once the change is in this node's image,
// so the new credential authenticates here at once.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, (*Broker).handleAlterUserScramCredentials)
}

func (b *Broker) handleAlterUserScramCredentials(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	if fwd, ok := b.forwardToController(ctx, r); ok {
		if fr, isResp := fwd.(*kmsg.AlterUserSCRAMCredentialsResponse); isResp {
			b.awaitImage(ctx, func(img *metadata.Image) bool { return scramApplied(img, req, fr) })
		}
		return fwd, nil
	}
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if b.controller == nil {
		return resp, nil
	}
	var dels []rules.ScramDeletion
	for _, d := range req.Deletions {
		dels = append(dels, rules.ScramDeletion{User: d.Name, Mechanism: d.Mechanism})
	}
	var ups []rules.ScramUpsertion
	for _, u := range req.Upsertions {
		ups = append(ups, rules.ScramUpsertion{User: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	users, errs, err := b.controller.AlterUserScramCredentials(ctx, dels, ups)
	for _, u := range users {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = u
		e := err
		if e == nil {
			e = errs[u]
		}
		res.ErrorCode = b.errCode(e)
		if e != nil {
			res.ErrorMessage = errMessage(e)
		}
		resp.Results = append(resp.Results, res)
	}
	if err == nil {
		b.awaitImage(ctx, func(img *metadata.Image) bool { return scramApplied(img, req, resp) })
	}
	return resp, nil
}

// scramApplied reports whether img reflects the successful users'
// alterations.
func scramApplied(img *metadata.Image, req *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse) bool {
	ok := map[string]bool{}
	for _, res := range resp.Results {
		ok[res.User] = res.ErrorCode == 0
	}
	for _, d := range req.Deletions {
		if _, has := img.ScramCredential(d.Name, d.Mechanism); ok[d.Name] && has {
			return false
		}
	}
	for _, u := range req.Upsertions {
		if c, has := img.ScramCredential(u.Name, u.Mechanism); ok[u.Name] && (!has || c.Iterations != u.Iterations || string(c.Salt) != string(u.Salt)) {
			return false
		}
	}
	return true
}
