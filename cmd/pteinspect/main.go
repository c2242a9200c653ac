// Command pteinspect shows what is inside an ExecuTorch program file (.pte),
// for people and for pipelines.
//
// Usage:
//
//	pteinspect [flags] FILE.pte|URL
//	pteinspect diff [--paths | --json [--summary]] [--layout] [--quiet] A.pte|URL B.pte|URL
//	pteinspect help [diff]
//
// By default it prints a summary that fits a screen (inspect.Summary): the
// methods, delegates per backend, payload sizes, problems, and for each
// method one line per group of alike delegates (backend, weight streaming
// budget, device), what its engine budgets add up to and any constant it
// returns. --long (-l) prints everything: file size, extended header,
// segment table, and for each method its inputs and outputs, instruction
// counts, operators, memory plan and delegates (backend, payload location
// and size, decoded compile specs, and for TensorRT delegates the blob
// header, bindings and any hazard where the deployed C++ reader reads the
// metadata differently from what it says). Both end with the problems
// every check finds (the same as --verify). A truncated file whose program
// region is whole is still shown, the truncation its first problem.
//
// pteinspect never writes the file it shows. When an interrupted
// pteexport --in-place left its undo record beside the file, every view
// shows the file as it is and reports the record (an "undo-record:"
// warning, or a warning on standard error for the views without
// problems); pteexport --recover applies it.
//
// pteinspect --help lists every flag: the views (--json, --hash, --method,
// --delegate, --compile-specs, --verify, --plan, --size, --data) and
// --extract PLAN:DELEGATE -o FILE, which writes a delegate's payload (or,
// with --engine, the TensorRT engine inside it) to a new file or "-".
//
// FILE "-" reads the program from standard input. An http:// or https://
// URL is read with range requests (a few KiB for the default and --json
// views of any size); --header 'Name: value' (repeatable) and
// $PTEKIT_HTTP_BEARER_TOKEN send credentials, --timeout DURATION bounds the
// reads. URLs are shown without user information, query and fragment.
//
// Exit status: 0 on success, 1 when the file is damaged or a check finds an
// error (the output is still complete), when --method or --delegate names
// nothing in the file, and for diff when the files differ; 2 on a usage
// error (diff: any error); 3 when reading a URL failed in a way worth
// retrying (changed on the server, connection failed or cut, 5xx/429
// after retries, --timeout passed); 130 (SIGINT) or 143 (SIGTERM) when
// interrupted (an --extract to a file then leaves no output and no
// temporary file behind). With --json, standard output holds one JSON
// object even on failure: {"error": {"kind", "message", "offset", "path"}}.
// pteinspect never reads payload bytes it does not need: the default and
// --json views of a multi-gigabyte program read a few kilobytes.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
