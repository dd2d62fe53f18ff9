// Command quantity reads one candidate Kubernetes quantity per line on stdin and prints,
// per line, apimachinery's verdict: "ok <exact decimal value> <canonical string>" or
// "error <message>". tests/unit/test_quantity.py compares our parser with it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		text, err := strconv.Unquote(in.Text())
		if err != nil {
			fmt.Fprintf(out, "error bad line\n")
			out.Flush()
			continue
		}
		// UnmarshalJSON is what the API server runs on every manifest's quantity, on the
		// string as JSON encodes it (a tab arrives as the two characters \t).
		encoded, _ := json.Marshal(text)
		var q resource.Quantity
		if err := q.UnmarshalJSON(encoded); err != nil {
			fmt.Fprintf(out, "error %s\n", err)
			out.Flush()
			continue
		}
		fmt.Fprintf(out, "ok %s %s\n", q.AsDec().String(), q.String())
		out.Flush() // one answer per question: the test talks to it line by line
	}
}
