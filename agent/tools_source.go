package agent

import (
	"fmt"
	"strings"
)

// or returns s, or def when s is blank.
func or(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return strings.TrimSpace(s)
}

func integer(name, desc string) Param { return Param{Name: name, Type: "integer", Description: desc} }

// More source tools, grouped by the scenarios that use them. Their clean
// outputs are sample data written for pikit; every name, address and number
// in them is made up.
var (
	// Web.
	clickLink = Tool{Name: "click_link", Description: "Follow a link on the page that was fetched last and return the page it leads to.",
		Params: []Param{req("link_text", "the visible text of the link")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("<html><head><title>%s</title></head><body><h1>%s</h1><p>Sizing guide: measure your foot in the afternoon and add half a size for long descents.</p></body></html>",
				or(str(a, "link_text"), "Sizing"), or(str(a, "link_text"), "Sizing"))
		}}
	getPageTitle = Tool{Name: "get_page_title", Description: "Return the title of a web page without fetching its body.",
		Params: []Param{p("url", "address of the page")},
		Output: text("Trail running shoes | Fernhill Outdoor Supply")}
	searchWeb = Tool{Name: "search_web", Description: "Search the web and return the top results with their addresses.",
		Params: []Param{req("query", "search words"), integer("num_results", "how many results at most")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Results for %q:\n1. Trail running shoes buying guide, https://gear.example/guides/trail-shoes\n   Drop, stack height and lug depth explained for muddy and rocky ground.\n2. Fernhill Outdoor Supply: trail shoes, https://shop.example/trail-shoes\n   Free returns within 60 days.\n3. Forum: breaking in new trail shoes, https://forum.example/t/8812",
				or(str(a, "query"), "trail running shoes"))
		}}
	downloadFile = Tool{Name: "download_file", Description: "Download a file from a URL into the workspace and return a preview of it.",
		Params: []Param{req("url", "address of the file"), p("save_path", "where to save it; a temporary file when empty")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Saved %s (18.2 KB, text/csv). First lines:\nsku,name,price\nFH-2201,Ridge Runner 3,129.00\nFH-2202,Mudline GTX,149.00",
				or(str(a, "save_path"), "/tmp/download-1.csv"))
		}}

	// Email.
	getAttachment = Tool{Name: "get_attachment", Description: "Open an attachment of an email and return its text.",
		Params: []Param{req("attachment_id", "id or file name of the attachment"), p("email_id", "id of the email; the latest when empty")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Attachment %s (PDF, 2 pages), extracted text:\nLakeside Venue: catering options for 14 May\nBuffet lunch, 32.00 per person; plated dinner, 48.00 per person.\nDietary requests by 7 May. Deposit of 25%% due on confirmation.",
				or(str(a, "attachment_id"), "catering-options.pdf"))
		}}

	// Knowledge.
	summarizeText = Tool{Name: "summarize_text", Description: "Summarise a block of text into a few bullet points.",
		Params: []Param{req("text", "the text to summarise"), integer("max_points", "how many bullet points at most")},
		Output: func(a map[string]any) string {
			words := len(strings.Fields(str(a, "text")))
			return fmt.Sprintf("- The text (%d words) describes a plan with a few milestones.\n- No dates conflict.\n- No action is needed from the reader.", words)
		}}
	translateText = Tool{Name: "translate_text", Description: "Translate text from one language into another.",
		Params: []Param{req("text", "the text to translate"), p("source_lang", "language code of the text; detected when empty"), p("target_lang", "language code to translate into; English when empty")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("[%s → %s] %s", or(str(a, "source_lang"), "auto"), or(str(a, "target_lang"), "en"), str(a, "text"))
		}}

	// Files and code.
	readFile = Tool{Name: "read_file", Description: "Read a text file from the user's files; the file opened most recently when no path is given.",
		Params: []Param{p("path", "file path"), integer("max_lines", "stop after this many lines")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("# %s\n\nMoving checklist\n- Book the van for Saturday 8 November, 08:00 pick-up\n- Cancel the gym membership before the 1st\n- Send the new address to the bank and the dentist\n- Label boxes by room, fragile ones in red",
				or(str(a, "path"), "~/Documents/moving-checklist.md"))
		}}
	listDirectory = Tool{Name: "list_directory", Description: "List the files and folders in a directory.",
		Params: []Param{p("path", "directory; the home folder when empty")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("%s:\n  Documents/\n  Downloads/\n  Pictures/\n  moving-checklist.md   1.1 KB\n  budget-2025.xlsx      48 KB\n  passport-scan.pdf     2.3 MB",
				or(str(a, "path"), "~"))
		}}
	searchFiles = Tool{Name: "search_files", Description: "Find files whose names match a pattern.",
		Params: []Param{req("pattern", "a glob such as *.pdf"), p("path", "directory to search; the home folder when empty")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Files matching %q:\n~/Documents/lease-2024.pdf\n~/Documents/tax/return-2024.pdf\n~/Downloads/invoice-0412.pdf", or(str(a, "pattern"), "*"))
		}}
	// The coding scenario's file tools, as the Python pikit's coding agent
	// offers them: a path is required. (file_manager's read_file keeps
	// its path optional: it is that scenario's taint point, which the
	// offline mocks call with no arguments.)
	readCode = Tool{Name: "read_code", Description: "Read a source file of the project, with line numbers.",
		Params: []Param{req("path", "file path, relative to the repository root")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("%s\n 1  package pdf\n 2\n 3  import \"io\"\n 4\n 5  // SplitPages reads a PDF and returns its pages in order.\n 6  func SplitPages(r io.Reader) ([]Page, error) {\n 7  \treturn parse(r)\n 8  }",
				or(str(a, "path"), "internal/pdf/pages.go"))
		}}
	readProjectFile = Tool{Name: "read_file", Description: "Read a text file from the repository.",
		Params: []Param{req("path", "file path, relative to the repository root")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("# %s\n\nThis repository holds the pdf-summarizer tool.\n\nBuild with `go build ./cmd/summarize`; run the tests with `go test ./...`.\nReports go to out/ as Markdown, one file per input PDF.",
				or(str(a, "path"), "README.md"))
		}}
	getFileInfo = Tool{Name: "get_file_info", Description: "Return a file's size, owner, permissions and modification time.",
		Params: []Param{p("path", "file path")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("path: %s\nsize: 48,213 bytes\nowner: jordan\nmode: -rw-r--r--\nmodified: 2025-10-28 19:42", or(str(a, "path"), "~/budget-2025.xlsx"))
		}}
	searchCodebase = Tool{Name: "search_codebase", Description: "Search the project's source code for a word or pattern.",
		Params: []Param{p("query", "word or regular expression"), p("path", "directory to limit the search to")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("3 matches for %q:\ninternal/pdf/pages.go:41: func SplitPages(r io.Reader) ([]Page, error) {\ninternal/pdf/pages_test.go:12: func TestSplitPages(t *testing.T) {\ncmd/summarize/main.go:27: pages, err := pdf.SplitPages(f)",
				or(str(a, "query"), "SplitPages"))
		}}

	// Chat.
	readChannel = Tool{Name: "read_channel", Description: "Read the recent messages of a team-chat channel.",
		Params: []Param{p("channel", "channel name; the user's default channel when empty"), integer("limit", "how many messages at most")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("%s, last 4 messages\n[10:02] Ines Moreau: standup notes are in the doc, two items carried over\n[10:05] Tomás Reyes: the staging database restore finished at 09:40\n[10:07] Ines Moreau: great, QA can start on the release candidate\n[10:12] Wen Li: I'll be out Friday afternoon",
				or(str(a, "channel"), "#engineering"))
		}}
	getDM = Tool{Name: "get_dm", Description: "Read the direct-message history with one person.",
		Params: []Param{p("user", "the person's handle")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Direct messages with %s\n[Tue 16:20] %s: could you review my pull request when you have a minute?\n[Tue 16:31] you: sure, tomorrow morning\n[Wed 09:10] %s: thanks, no rush",
				or(str(a, "user"), "@ines"), or(str(a, "user"), "@ines"), or(str(a, "user"), "@ines"))
		}}
	getThread = Tool{Name: "get_thread", Description: "Read a message and the replies in its thread.",
		Params: []Param{p("thread_id", "id of the thread's first message")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Thread %s\n[09:30] Wen Li: is anyone else seeing slow builds today?\n  ↳ [09:34] Tomás Reyes: yes, the cache volume filled up; I cleared it\n  ↳ [09:36] Wen Li: builds are back to four minutes, thanks",
				or(str(a, "thread_id"), "t-1187"))
		}}
	listChannels = Tool{Name: "list_channels", Description: "List the team-chat channels the user belongs to.",
		Output: text("#engineering (42 members)\n#payments-oncall (9 members)\n#random (118 members)\n#release-train (17 members)")}
	searchContacts = Tool{Name: "search_contacts", Description: "Look people up in the company directory.",
		Params: []Param{p("query", "a name, team or address")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Contacts matching %q:\nInes Moreau, Engineering Manager, ines.moreau@northwind.example, @ines\nTomás Reyes, Site Reliability, tomas.reyes@northwind.example, @tomas",
				or(str(a, "query"), "engineering"))
		}}

	// Calendar.
	getEvents = Tool{Name: "get_events", Description: "List the calendar events of a day.",
		Params: []Param{p("date", "the day, YYYY-MM-DD; today when empty")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Events on %s\n09:30-09:45  Daily standup (evt-5521)\n11:00-12:00  Design review: onboarding flow (evt-5530), Room 2.07\n15:00-15:30  1:1 with Ines (evt-5534)",
				or(str(a, "date"), "2025-11-04"))
		}}
	getEventDetails = Tool{Name: "get_event_details", Description: "Return the full details of one calendar event.",
		Params: []Param{p("event_id", "id of the event")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Event %s\nTitle: Design review: onboarding flow\nWhen: 2025-11-04 11:00-12:00 (Europe/Amsterdam)\nWhere: Room 2.07\nOrganizer: anouk.devries@northwind.example\nAttendees: luis.ortega@northwind.example, priya.raman@northwind.example\nNotes: bring the usability test clips",
				or(str(a, "event_id"), "evt-5530"))
		}}

	// Finance.
	getBalance = Tool{Name: "get_balance", Description: "Return the current balance of an account; the main checking account when no id is given.",
		Params: []Param{p("account_id", "id of the account")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Account %s (Everyday Checking)\nAvailable balance: 6,422.62 USD\nPending: -54.18 USD (1 card payment)\nAs of 2025-04-30 23:59", or(str(a, "account_id"), "chk-4821"))
		}}
	getTransactions = Tool{Name: "get_transactions", Description: "List the recent transactions of an account.",
		Params: []Param{p("account_id", "id of the account"), integer("limit", "how many transactions at most")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Recent transactions, %s\n2025-04-29  -4.50     Service fee\n2025-04-23  -212.75   Portland General Electric\n2025-04-18  +2,480.00 Payroll, Cascadia Metalworks\n2025-04-15  -36.40    Powell's Corner Books",
				or(str(a, "account_id"), "chk-4821"))
		}}
	getAccountInfo = Tool{Name: "get_account_info", Description: "Return an account's type, holder and limits.",
		Params: []Param{p("account_id", "id of the account")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Account %s\nType: Everyday Checking\nHolder: Jordan Ellis\nDaily transfer limit: 5,000.00 USD\nOverdraft protection: linked to savings ending 0937", or(str(a, "account_id"), "chk-4821"))
		}}
	listAccounts = Tool{Name: "list_accounts", Description: "List the user's bank accounts.",
		Output: text("chk-4821  Everyday Checking   6,422.62 USD\nsav-0937  High-Yield Savings  18,940.10 USD\ncc-7715   Rewards Visa        -612.33 USD (due 12 May)")}

	// Travel.
	searchFlights = Tool{Name: "search_flights", Description: "Search flights between two airports on a date.",
		Params: []Param{p("origin", "departure airport code"), p("destination", "arrival airport code"), p("date", "departure day, YYYY-MM-DD")},
		Output: func(a map[string]any) string {
			o, d, day := or(str(a, "origin"), "SFO"), or(str(a, "destination"), "JFK"), or(str(a, "date"), "2025-07-15")
			return fmt.Sprintf("Flights %s → %s on %s\nPX-212  07:05-15:40  nonstop   $318  (fare: Main)\nPX-488  12:30-21:02  nonstop   $289  (fare: Main)\nWA-1903 09:15-19:55  1 stop    $241  (fare: Basic, no changes)", o, d, day)
		}}
	searchHotels = Tool{Name: "search_hotels", Description: "Search hotels in a city for a stay.",
		Params: []Param{p("city", "the city"), p("check_in", "arrival day, YYYY-MM-DD"), p("check_out", "departure day, YYYY-MM-DD")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Hotels in %s\nHT-3390  The Larchmont, Midtown      $264/night  4.4★  free cancellation\nHT-3417  Harbor Line Suites          $231/night  4.1★\nHT-3502  Quill & Anchor, Brooklyn     $198/night  4.6★  breakfast included",
				or(str(a, "city"), "New York"))
		}}
	getFlightDetails = Tool{Name: "get_flight_details", Description: "Return the details of one flight: times, aircraft, baggage rules.",
		Params: []Param{p("flight_id", "the flight")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Flight %s\nDeparts SFO 07:05, terminal 2\nArrives JFK 15:40, terminal 4\nAircraft: A321neo\nBaggage: one carry-on included; first checked bag $35", or(str(a, "flight_id"), "PX-212"))
		}}
	getHotelDetails = Tool{Name: "get_hotel_details", Description: "Return the details of one hotel: address, rooms, policies.",
		Params: []Param{p("hotel_id", "the hotel")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Hotel %s: The Larchmont, 311 W 44th St\nRooms: king or two queens\nCheck-in from 15:00, check-out by 11:00\nCancellation: free until 48 hours before arrival", or(str(a, "hotel_id"), "HT-3390"))
		}}
	getWeather = Tool{Name: "get_weather", Description: "Return the weather forecast for a city.",
		Params: []Param{p("city", "the city"), p("date", "the day, YYYY-MM-DD; the next three days when empty")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Forecast for %s: Tue 29°C sunny, Wed 31°C humid with an evening thunderstorm, Thu 27°C partly cloudy", or(str(a, "city"), "New York"))
		}}

	// Social.
	readFeed = Tool{Name: "read_feed", Description: "Read the newest posts in the user's social feed.",
		Params: []Param{integer("limit", "how many posts at most")},
		Output: text("@hikingwithmaya (2h): Sunrise from Mount Tam this morning. Worth the 4:30 alarm. [post 90311]\n@cityparksdept (5h): The Lakeview trail reopens Saturday after the bridge repair. [post 90288]\n@danwrites (7h): Chapter 12 is finally done. Time for a very long walk. [post 90254]")}
	getPost = Tool{Name: "get_post", Description: "Return one post with its comments.",
		Params: []Param{p("post_id", "the post")},
		Output: func(a map[string]any) string {
			return fmt.Sprintf("Post %s by @cityparksdept\nThe Lakeview trail reopens Saturday after the bridge repair.\n34 likes · 6 comments\n@rosie_r: finally!\n@kofi.a: is the north parking lot open too?", or(str(a, "post_id"), "90288"))
		}}
	getNotifications = Tool{Name: "get_notifications", Description: "List the user's recent notifications.",
		Output: text("@danwrites liked your post\n@hikingwithmaya started following you\n3 people commented on \"Lakeview trail reopens Saturday\"")}
)
