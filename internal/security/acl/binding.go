// Package acl is Kafka's ACL authorization: bindings of a resource pattern
// to an access control entry, kept in the metadata log as
// AccessControlEntryRecords, the filters of DescribeAcls and DeleteAcls, and
// the Authorizer with StandardAuthorizer's semantics (super users, DENY
// before ALLOW, implied operations, allow.everyone.if.no.acl.found).
//
// Enum values are Kafka's wire values, as kmsg declares them.
package acl

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security"
)

// Resource types, pattern types, operations and permissions, Kafka's codes.
const (
	ResourceAny             = kmsg.ACLResourceTypeAny
	ResourceTopic           = kmsg.ACLResourceTypeTopic
	ResourceGroup           = kmsg.ACLResourceTypeGroup
	ResourceCluster         = kmsg.ACLResourceTypeCluster
	ResourceTransactionalID = kmsg.ACLResourceTypeTransactionalId
	ResourceDelegationToken = kmsg.ACLResourceTypeDelegationToken
	ResourceUser            = kmsg.ACLResourceTypeUser

	PatternAny      = kmsg.ACLResourcePatternTypeAny
	PatternMatch    = kmsg.ACLResourcePatternTypeMatch
	PatternLiteral  = kmsg.ACLResourcePatternTypeLiteral
	PatternPrefixed = kmsg.ACLResourcePatternTypePrefixed

	OpAny             = kmsg.ACLOperationAny
	OpAll             = kmsg.ACLOperationAll
	OpRead            = kmsg.ACLOperationRead
	OpWrite           = kmsg.ACLOperationWrite
	OpCreate          = kmsg.ACLOperationCreate
	OpDelete          = kmsg.ACLOperationDelete
	OpAlter           = kmsg.ACLOperationAlter
	OpDescribe        = kmsg.ACLOperationDescribe
	OpClusterAction   = kmsg.ACLOperationClusterAction
	OpDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	OpAlterConfigs    = kmsg.ACLOperationAlterConfigs
	OpIdempotentWrite = kmsg.ACLOperationIdempotentWrite
	OpCreateTokens    = kmsg.ACLOperationCreateTokens
	OpDescribeTokens  = kmsg.ACLOperationDescribeTokens

	PermissionAny   = kmsg.ACLPermissionTypeAny
	PermissionDeny  = kmsg.ACLPermissionTypeDeny
	PermissionAllow = kmsg.ACLPermissionTypeAllow
)

// ClusterName is the name of the one Cluster resource (Kafka's
// "kafka-cluster").
const ClusterName = "kafka-cluster"

// Wildcard is the resource name and host matching every name or host, and
// WildcardPrincipal the principal matching every principal (Kafka's
// ResourcePattern.WILDCARD_RESOURCE, AclEntry.WILDCARD_HOST and
// WILDCARD_PRINCIPAL_STRING).
const (
	Wildcard          = "*"
	WildcardPrincipal = "User:*"
)

// Binding is one ACL: a resource pattern and an access control entry.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// FromRecord is the binding a metadata record holds.
func FromRecord(r *metadata.AccessControlEntryRecord) Binding {
	return Binding{
		ResourceType: kmsg.ACLResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: kmsg.ACLResourcePatternType(r.PatternType), Principal: r.Principal, Host: r.Host,
		Operation: kmsg.ACLOperation(r.Operation), Permission: kmsg.ACLPermissionType(r.PermissionType),
	}
}

// Record is the metadata record of the binding, with the given id.
func (b Binding) Record(id metadata.Uuid) *metadata.AccessControlEntryRecord {
	return &metadata.AccessControlEntryRecord{
		ID: id, ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName, PatternType: int8(b.PatternType),
		Principal: b.Principal, Host: b.Host, Operation: int8(b.Operation), PermissionType: int8(b.Permission),
	}
}

func (b Binding) String() string {
	return fmt.Sprintf("(pattern=%s:%s:%s, principal=%s, host=%s, operation=%s, permission=%s)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Operation, b.Permission)
}

// Validate checks a binding CreateAcls is to store, as Kafka's controller
// does (AclControlManager.validateNewAcl): concrete resource, pattern,
// operation and permission types, a non-empty name, a Type:Name principal.
// Errors wrap kerr.InvalidRequest.
func (b Binding) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", kerr.InvalidRequest, fmt.Sprintf(format, args...))
	}
	switch b.ResourceType {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceDelegationToken, ResourceUser:
	default:
		return bad("invalid resource type %s", b.ResourceType)
	}
	if b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed {
		return bad("invalid pattern type %s: only LITERAL and PREFIXED bindings can be stored", b.PatternType)
	}
	if b.ResourceName == "" {
		return bad("resource name should not be empty")
	}
	if b.ResourceType == ResourceCluster && b.ResourceName != ClusterName {
		return bad("the only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if b.Operation <= OpAny || b.Operation > OpDescribeTokens {
		return bad("invalid operation %s", b.Operation)
	}
	if b.Permission != PermissionAllow && b.Permission != PermissionDeny {
		return bad("invalid permission type %s", b.Permission)
	}
	p, err := security.ParsePrincipal(b.Principal)
	if err != nil || p.Name == "" {
		return bad("invalid principal %q: expected Type:Name", b.Principal)
	}
	if b.Host == "" {
		return bad("host should not be empty (use %q for every host)", Wildcard)
	}
	return nil
}

// Filter selects bindings (DescribeAcls, DeleteAcls): ANY matches every
// value of an enum, a nil string every string; PatternMatch selects every
// pattern that matches the filter's name (LITERAL equal or "*", PREFIXED a
// prefix of it), as Kafka's ResourcePatternFilter.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Validate refuses filters with unknown enum values (INVALID_REQUEST).
func (f Filter) Validate() error {
	switch {
	case f.ResourceType < ResourceAny || f.ResourceType > ResourceUser:
		return fmt.Errorf("%w: invalid resource type %s", kerr.InvalidRequest, f.ResourceType)
	case f.PatternType < PatternAny || f.PatternType > PatternPrefixed:
		return fmt.Errorf("%w: invalid pattern type %s", kerr.InvalidRequest, f.PatternType)
	case f.Operation < OpAny || f.Operation > OpDescribeTokens:
		return fmt.Errorf("%w: invalid operation %s", kerr.InvalidRequest, f.Operation)
	case f.Permission < PermissionAny || f.Permission > PermissionAllow:
		return fmt.Errorf("%w: invalid permission type %s", kerr.InvalidRequest, f.Permission)
	}
	return nil
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) &&
		(f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) &&
		(f.Permission == PermissionAny || f.Permission == b.Permission)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == PatternAny || f.PatternType == b.PatternType {
		return name == b.ResourceName
	}
	switch b.PatternType {
	case PatternLiteral:
		return name == b.ResourceName || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// Match returns the bindings of set the filter selects, with their ids, in
// id order.
func Match(set *metadata.ACLSet, f Filter) []*metadata.AccessControlEntryRecord {
	var out []*metadata.AccessControlEntryRecord
	for _, r := range set.Sorted() {
		if f.Matches(FromRecord(r)) {
			out = append(out, r)
		}
	}
	return out
}
