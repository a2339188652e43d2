// Package handlers holds the validating admission handlers of the webhooks binary:
// ValkeyCluster objects are checked with the rules of the api/validation package, and
// ValkeyNode objects, which only the operator writes, are checked for who writes them.
package handlers
