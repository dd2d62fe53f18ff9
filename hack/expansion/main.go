// Command expansion reads JSON lines {"text": ..., "env": {...}} on stdin and prints, per
// line, the JSON string the kubelet's $(VAR) expansion makes of text against env
// (k8s.io/kubernetes/third_party/forked/golang/expansion, the code the kubelet runs on
// env values, command and args). tests/unit/test_kubeenv_oracle.py compares ours with it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

type question struct {
	Text string            `json:"text"`
	Env  map[string]string `json:"env"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var q question
		if err := json.Unmarshal(in.Bytes(), &q); err != nil {
			fmt.Fprintln(out, `{"error": "bad line"}`)
			out.Flush()
			continue
		}
		mapping := expansion.MappingFuncFor(q.Env)
		answer, _ := json.Marshal(expansion.Expand(q.Text, mapping))
		fmt.Fprintln(out, string(answer))
		out.Flush()
	}
}
