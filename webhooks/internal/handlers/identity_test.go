package handlers

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
)

func TestParseServiceAccounts(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "", want: ""},
		{in: "valkey-system:cluster-controller", want: "valkey-system:cluster-controller"},
		{in: " a:x , b:y ,", want: "a:x,b:y"},
		{in: "valkey-system:*", want: "valkey-system:*"},
		{in: "no-colon", wantErr: true},
		{in: "Bad_NS:x", wantErr: true},
		{in: "ns:Bad Name", wantErr: true},
		{in: ":name", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ids, err := ParseServiceAccounts(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && ids.String() != tc.want {
				t.Errorf("String() = %q, want %q", ids.String(), tc.want)
			}
		})
	}
}

func TestIsOperator(t *testing.T) {
	ids, err := ParseServiceAccounts("valkey-system:valkey-operator-cluster-controller,ops:*")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user string
		want bool
	}{
		{user: operatorSA, want: true},
		{user: "system:serviceaccount:ops:anything", want: true},
		{user: "system:serviceaccount:valkey-system:someone-else"},
		{user: "system:serviceaccount:other:valkey-operator-cluster-controller"},
		{user: "valkey-system:valkey-operator-cluster-controller"},
		{user: "kubernetes-admin"},
		{user: "system:serviceaccount:opsx:a"},
	} {
		t.Run(tc.user, func(t *testing.T) {
			if got := ids.IsOperator(authenticationv1.UserInfo{Username: tc.user}); got != tc.want {
				t.Errorf("IsOperator(%q) = %v, want %v", tc.user, got, tc.want)
			}
		})
	}
	if (Identities{}).IsOperator(authenticationv1.UserInfo{Username: operatorSA}) {
		t.Error("empty identities must match nobody")
	}
}
