package localkube

import (
	"strings"
	"testing"
)

// The queue rules pass DNS, root's own traffic and established connections, queue the
// rest of the pod network's to the agent's queue without dropping while no agent
// listens, and hook in after kube-proxy's DNAT.
func TestNetpolQueueRules(t *testing.T) {
	var got []string
	for _, r := range netpolQueueRules() {
		got = append(got, strings.Join(r, " "))
	}
	want := []string{
		"-t mangle -N LOCALKUBE-NETPOL",
		"-t mangle -A LOCALKUBE-NETPOL -p udp --dport 53 -j RETURN",
		"-t mangle -A LOCALKUBE-NETPOL -m owner --uid-owner 0 -j RETURN",
		"-t mangle -A LOCALKUBE-NETPOL -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN",
		"-t mangle -A LOCALKUBE-NETPOL -s 10.88.0.0/16 -j NFQUEUE --queue-num 100 --queue-bypass",
		"-t mangle -A LOCALKUBE-NETPOL -d 10.88.0.0/16 -j NFQUEUE --queue-num 100 --queue-bypass",
		"-t mangle -A POSTROUTING -j LOCALKUBE-NETPOL",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, _, _, ds := netpolObjects()
	c := ds.Spec.Template.Spec.Containers[0]
	if !ds.Spec.Template.Spec.HostNetwork || c.Image != "docker.io/local/kube-network-policies:dev" ||
		!strings.Contains(strings.Join(c.Args, " "), "--nfqueue-id=100") {
		t.Errorf("DaemonSet: hostNetwork %v, image %s, args %v", ds.Spec.Template.Spec.HostNetwork, c.Image, c.Args)
	}
}
