package meshview

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
)

func noDeadLetters(int, uint64) control.DeadLettersResult {
	return control.DeadLettersResult{ByKind: map[string]uint64{}, Recent: []control.DeadLetter{}}
}

// TestDeadLettersAPI: /api/deadletters answers with what the source says
// for its after and n, and refuses bad ones.
func TestDeadLettersAPI(t *testing.T) {
	var gotN int
	var gotAfter uint64
	src := func(n int, after uint64) control.DeadLettersResult {
		gotN, gotAfter = n, after
		return control.DeadLettersResult{Total: 3, ByKind: map[string]uint64{"no such actor": 3}, Recent: []control.DeadLetter{{Seq: 3, To: "p/x"}}}
	}
	srv := httptest.NewServer(NewHandler(testHub(t), src))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/api/deadletters?after=2&n=5")
	if err != nil {
		t.Fatal(err)
	}
	var r control.DeadLettersResult
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil || r.Total != 3 || len(r.Recent) != 1 || gotN != 5 || gotAfter != 2 {
		t.Fatalf("%v %+v (n %d, after %d)", err, r, gotN, gotAfter)
	}
	for _, q := range []string{"after=-1", "after=x", "n=-2", "n=many"} {
		resp, err := srv.Client().Get(srv.URL + "/api/deadletters?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s", q, resp.Status)
		}
	}
}
