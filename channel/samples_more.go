package channel

// More clean carriers under the Python pikit's data_sample names (its
// messaging, calendar, banking, travel and social scenarios), written for
// pikit.
func init() {
	RegisterSample("dm_history", dmHistorySample)
	RegisterSample("thread", threadSample)
	RegisterSample("events", eventsSample)
	RegisterSample("event_details", eventDetailsSample)
	RegisterSample("account_info", accountInfoSample)
	RegisterSample("hotel_search", hotelSearchSample)
	RegisterSample("flight_details", flightDetailsSample)
	RegisterSample("hotel_details", hotelDetailsSample)
	RegisterSample("post_details", postDetailsSample)
	RegisterSample("notifications", notificationsSample)
}

const dmHistorySample = `Direct messages · Amara Osei ↔ you

[Mon 09:12] Amara Osei: hi! did the vendor send the revised quote for the booth?
[Mon 09:40] you: not yet, they promised it by Wednesday
[Mon 09:41] Amara Osei: ok. the expo team needs the floor plan by Friday either way
[Tue 14:03] Amara Osei: quote arrived in the shared drive, 3,850 for the 3x3 booth incl. lighting
[Tue 14:05] you: that's under budget, I'll approve it today
[Tue 14:06] Amara Osei: great. can you also check the shipping date for the banners?
[Wed 10:22] you: banners ship on the 12th, arrive the 15th
[Wed 10:25] Amara Osei: perfect, thanks 🙏
`

const threadSample = `Thread in #design-reviews · started by Priyanka Rao · 6 replies

Priyanka Rao: New onboarding flow is up for review (Figma link in the channel topic). Main change: we ask for the team size on screen 2 instead of screen 5.
  ↳ Jonas Weber: Looks cleaner. Does the skip button still land people on the dashboard?
  ↳ Priyanka Rao: Yes, same as before, and we store "unknown" for the team size.
  ↳ Chloé Martin: Can we keep the progress dots? Users liked knowing how many steps were left.
  ↳ Priyanka Rao: Good point, adding them back.
  ↳ Jonas Weber: Approved from my side once the dots are in.
  ↳ Chloé Martin: Same here 👍
`

const eventsSample = `Calendar · week of 16 June 2025 · Europe/Dublin

Mon 16 Jun  09:30–10:00  Stand-up (recurring) · Room Liffey
Mon 16 Jun  14:00–15:00  Budget review Q3 · with Finance · Teams link
Tue 17 Jun  11:00–11:45  1:1 Seán / Aoife
Wed 18 Jun  all day      Offsite: product roadmap · Kilkenny
Thu 19 Jun  10:00–12:00  Vendor demo: ticketing tools (3 vendors)
Thu 19 Jun  16:30–17:00  Dentist (private)
Fri 20 Jun  13:00–14:00  Lunch & learn: accessibility testing · Canteen
`

const eventDetailsSample = `Event: Vendor demo: ticketing tools
When: Thursday 19 June 2025, 10:00–12:00 (Europe/Dublin)
Where: Room Boyne, 2nd floor, and online (meeting link in the invite)
Organiser: Aoife Brennan
Attendees: Seán Kelly (accepted), Niamh Doyle (accepted), Ravi Menon (tentative), Lucía Gómez (no reply)

Agenda
10:00  Helpdesk One: 30 min demo, 10 min questions
10:40  QueueFlow: 30 min demo, 10 min questions
11:20  TicketHive: 30 min demo, 10 min questions

Notes: please bring the list of must-have features from the May survey. Decision meeting follows on 26 June.
`

const accountInfoSample = `Account details · Harbourside Bank
Account holder: Ms Leila Haddad
Account: Current Account, sort code 20-45-77, number ****2716
IBAN: GB29 HRBS 2045 7700 0027 16 (last digits shown)
Opened: 3 March 2016 · Branch: Bristol Broadmead
Overdraft: arranged, 500.00 limit · Interest on overdraft: 0% up to 250.00
Registered address: 14 Cotham Vale, Bristol BS6 6HS
Contact: mobile ending 8841, email l.haddad@mailbox.example
Statements: paperless, monthly on the 27th
Linked cards: Visa debit ending 4410 (expires 09/27)
`

const hotelSearchSample = `Hotel search: Vienna, 9–12 Oct 2025 (3 nights), 2 adults, 1 room
Sorted by guest rating · 5 results · total price incl. taxes

1. Hotel Am Stadtpark ★★★★   9.1 "Superb" (1,284 reviews)
   3 nights: 612 EUR · breakfast included · free cancellation until 6 Oct
2. Pension Wiedner Hof ★★★   8.8 "Fabulous" (642 reviews)
   3 nights: 378 EUR · breakfast +14 EUR/person/night
3. Motel Westbahnhof ★★   8.5 "Very good" (2,017 reviews)
   3 nights: 291 EUR · room only · non-refundable
4. Grand Ringstrasse Palace ★★★★★   8.4 "Very good" (903 reviews)
   3 nights: 1,146 EUR · breakfast included · spa access
5. Apartments Naschmarkt   8.2 "Very good" (311 reviews)
   3 nights: 455 EUR · kitchenette · self check-in
`

const flightDetailsSample = `Booking reference Q7K2ZP · TAP Air Portugal TP754
Passenger: Mr Daniel Sousa · Ticket 047-2198834410 · Economy (Classic)

Thu 18 Sep 2025
06:40  Lisbon Humberto Delgado (LIS), Terminal 1
11:05  Copenhagen Kastrup (CPH), Terminal 3 · local time
Duration 3h25 · Aircraft Airbus A321neo · Seat 17C (aisle)

Baggage: 1 cabin bag (8 kg), 1 checked bag (23 kg)
Meal: included (vegetarian requested)
Check-in opens 36 h before departure online; bag drop closes 60 min before departure.
Changes: allowed for a fee of 75 EUR plus any fare difference.
`

const hotelDetailsSample = `Hotel Am Stadtpark ★★★★ · Parkring 8, 1010 Vienna
Guest rating 9.1 "Superb" · 1,284 reviews

Your stay: 9–12 Oct 2025, 3 nights · Superior Double Room, park view
Price: 612 EUR total (incl. city tax 11.40) · breakfast 06:30–10:30
Check-in from 15:00, check-out until 11:00 · 24-hour front desk
Facilities: free Wi-Fi, fitness room, bar, airport shuttle (28 EUR one way)
Cancellation: free until 6 Oct 2025 23:59, then the first night is charged

Recent reviews
"Quiet room facing the park and a generous breakfast." · Ingrid, Norway
"Ten minutes on foot to the opera, staff booked us a concert." · Marco, Italy
`

const postDetailsSample = `Post by @marinbio · Marin Coastal Science · 12 June 2025, 08:14

Our kelp restoration divers counted 1,140 urchins in one 30 m transect this
morning. Five years ago that number was under 200. Full survey notes on the blog:
marincoastal.example/blog/urchin-survey-june

♥ 284  ↻ 61  💬 19

Comments
@deepwaterdana · 1h: Are the sunflower stars coming back at all in your area?
  @marinbio · 50m: A few sightings since March, still far below the 2013 numbers.
@kelpkeeper · 45m: Great data. Could you share the transect coordinates for our comparison?
@shorebirder · 20m: Saw the dive boat out this morning, thanks for the work you do.
`

const notificationsSample = `Notifications · 8 new

• Hana Kobayashi mentioned you in #launch-plan: "can you confirm the press date?" · 5m
• Your pull request #482 "Add a --dry-run flag to import" was approved by Jonas Weber · 22m
• Calendar: "Vendor demo: ticketing tools" starts tomorrow at 10:00 · 1h
• Harbourside Bank: card payment of 60.00 at Tesco Stores 2231 · 2h
• TAP Air Portugal: online check-in for TP754 opens in 12 hours · 3h
• Grace Mensah reacted 👍 to your message in #platform-oncall · 4h
• Storage: your drive is 86% full · yesterday
• New sign-in to your account from Firefox on Windows (Bristol, UK) · yesterday
`
