// Command selector reads one question per line on stdin, {"selector": <a LabelSelector as
// JSON>, "labels": [<label map>, ...]}, and prints per line apimachinery's verdict as JSON:
// {"valid": true, "matches": [<bool per label map>]} or {"valid": false, "error": "..."}.
// tests/unit/test_selector_oracle.py compares policy.parse_selector and Selector.matches
// with it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

type question struct {
	Selector json.RawMessage     `json:"selector"`
	Labels   []map[string]string `json:"labels"`
}

type answer struct {
	Valid   bool   `json:"valid"`
	Error   string `json:"error,omitempty"`
	Matches []bool `json:"matches,omitempty"`
}

func judge(line []byte) answer {
	var q question
	if err := json.Unmarshal(line, &q); err != nil {
		return answer{Error: "bad question: " + err.Error()}
	}
	// The API server decodes a stored object's selector into this type: a value of the
	// wrong JSON type is refused here already.
	var ls metav1.LabelSelector
	if err := json.Unmarshal(q.Selector, &ls); err != nil {
		return answer{Error: "decode: " + err.Error()}
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return answer{Error: err.Error()}
	}
	matches := make([]bool, len(q.Labels))
	for i, set := range q.Labels {
		matches[i] = sel.Matches(labels.Set(set))
	}
	return answer{Valid: true, Matches: matches}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		encoded, _ := json.Marshal(judge(in.Bytes()))
		fmt.Fprintf(out, "%s\n", encoded)
		out.Flush() // one answer per question: the test talks to it line by line
	}
}
