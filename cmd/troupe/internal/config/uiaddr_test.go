package config

import "testing"

func TestIsLocalHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1:1": true, "127.9.9.9": true, "[::1]:80": true, "::1": true,
		"": false, "example.com": false, "localhost.evil.com:80": false, "10.0.0.1:80": false, "[::]:80": false, "0.0.0.0:80": false,
	} {
		if got := IsLocalHost(host); got != want {
			t.Errorf("IsLocalHost(%q) = %v, want %v", host, got, want)
		}
	}
	if err := CheckUIAddr("0.0.0.0:8080"); err == nil {
		t.Error("the view may listen on every interface")
	}
	if err := CheckUIAddr("127.0.0.1:0"); err != nil {
		t.Error(err)
	}
}
