package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	db, err := sql.Open("sqlite", os.Args[1])
	if err != nil { panic(err) }
	rows, err := db.Query(os.Args[2])
	if err != nil { panic(err) }
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols)); ptrs := make([]any, len(cols))
		for i := range vals { ptrs[i] = &vals[i] }
		rows.Scan(ptrs...)
		for i, v := range vals { if b, ok := v.([]byte); ok { vals[i] = string(b) } }
		fmt.Println(vals...)
	}
}
