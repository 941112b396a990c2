package wire

// SearchResults is GET /rooms/{room}/search (one room) and GET /search
// (every room the signed-in account may read): hits best first.
type SearchResults struct {
	// RoomID is the room searched, on the room's route only.
	RoomID  string      `json:"room_id,omitempty"`
	Query   string      `json:"query"`
	Results []SearchHit `json:"results"`
	// HasMore says more hits follow; NextCursor (null when none do),
	// passed back as ?cursor= with the same query and filters, reads them.
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
	// UncheckedRooms, on GET /search, are rooms of the account whose
	// access GitHub did not confirm just now: they were not searched.
	UncheckedRooms []string `json:"unchecked_rooms,omitempty"`
}

// SearchHit is a message a search found. Its message is as a read gives
// it, without reply_to and thread (null); rank orders hits (higher is
// better, comparable within one search only); snippet is the part of
// its text around the words found.
type SearchHit struct {
	Message Message       `json:"message"`
	Rank    float32       `json:"rank"`
	Snippet []SnippetPart `json:"snippet"`
}

// SnippetPart is a piece of a snippet, plain text (never markup: render
// it as text); match marks the words the query found. The parts, joined,
// are the snippet.
type SnippetPart struct {
	Text  string `json:"text"`
	Match bool   `json:"match,omitempty"`
}
