package broker

// DescribeUserScramCredentials (key 50), v0 (KIP-554).
//
// Lists users' SCRAM mechanisms and iterations from this node's metadata
// image (never salts or keys), as a Kafka broker answers from its image. No
// users (null or empty): every user with a credential. A named user
// without one is RESOURCE_NOT_FOUND ("Attempt to describe a user credential
// that does not exist"); a name given twice is DUPLICATE_RESOURCE for it.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, 0, 0, (*Broker).handleDescribeUserScramCredentials)
}

func (b *Broker) handleDescribeUserScramCredentials(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	creds := b.meta.Image().ScramCredentials()
	byUser := map[string][]metadata.ScramKey{}
	for k := range creds {
		byUser[k.User] = append(byUser[k.User], k)
	}
	result := func(user string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		keys := byUser[user]
		slices.SortFunc(keys, func(a, b metadata.ScramKey) int { return int(a.Mechanism) - int(b.Mechanism) })
		for _, k := range keys {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = k.Mechanism, creds[k].Iterations
			res.CredentialInfos = append(res.CredentialInfos, ci)
		}
		return res
	}
	if len(req.Users) == 0 {
		for _, u := range slices.Sorted(maps.Keys(byUser)) {
			resp.Results = append(resp.Results, result(u))
		}
		return resp, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		res := result(u.Name)
		switch {
		case count[u.Name] > 1:
			res.CredentialInfos = nil
			res.ErrorCode = kerr.DuplicateResource.Code
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name
			res.ErrorMessage = &msg
		case len(res.CredentialInfos) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + u.Name
			res.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
