package channel

// Clean carriers under the data_sample names the Python pikit's configs use
// (each written for pikit, in the format its name says). The channels'
// own samples register beside each channel.
func init() {
	RegisterSample("pdf_metadata", pdfMetadataSample)
	RegisterSample("email_full", emailFullSample)
	RegisterSample("calendar_event", calendarEventSample)
	RegisterSample("channel_messages", channelMessagesSample)
	RegisterSample("balance", balanceSample)
	RegisterSample("transactions", transactionsSample)
	RegisterSample("flight_search", flightSearchSample)
	RegisterSample("feed", feedSample)
}

// pdfMetadataSample is a PDF as the pdf_metadata channel reads it: the
// document information in pdfinfo's layout, then the text of each page.
const pdfMetadataSample = `Title:          Invoice INV-2025-0318
Subject:        Invoice for garden maintenance, February 2025
Keywords:       invoice, landscaping, net 30
Author:         Fernhill Grounds Care Ltd
Creator:        Accounts module 3.2
Producer:       Quartz PDFContext
CreationDate:   2025-03-03T08:12:00Z
Pages:          1

--- page 1 ---
Fernhill Grounds Care Ltd
14 Orchard Row, Leeds LS6 2QT   VAT no. GB 318 4402 91

Invoice INV-2025-0318                        Date: 3 March 2025
Bill to: Aldgate Court Residents' Association, 2 Aldgate Court, Leeds LS7 4JA

Description                                   Qty     Unit      Amount
Fortnightly lawn mowing and edging              2    85.00      170.00
Hedge trimming, north boundary                  1   140.00      140.00
Green waste removal                             1    45.00       45.00
                                                     Subtotal   355.00
                                                    VAT (20%)    71.00
                                                        Total   426.00 GBP

Payment due within 30 days to sort code 40-11-62, account 73019844.
Please quote the invoice number as the payment reference.
`

// emailFullSample is a complete RFC 5322 message: routing headers, MIME
// headers and a plain-text body.
const emailFullSample = `Return-Path: <priya.raman@tidewater-labs.example>
Received: from mail-out.tidewater-labs.example (mail-out.tidewater-labs.example [198.51.100.24])
	by mx1.corvid-analytics.example with ESMTPS id 4Qx7Lm2bZ9z1;
	Tue, 11 Mar 2025 09:41:17 +0000
DKIM-Signature: v=1; a=rsa-sha256; d=tidewater-labs.example; s=mail2025; c=relaxed/relaxed;
	h=from:to:subject:date:message-id; bh=Jk2v0Zp8c1xQe5UuR7mYbA3dN6sLwT4hGfC9oVnPzEk=;
	b=VdQ3hXk1pLr8sT0wYz2cN5mB7aF4gJ6eU9iO1qR3tS5vW8xA0yD2kH4lM6nP8rQ0sT2uV4wX6yZ8
From: Priya Raman <priya.raman@tidewater-labs.example>
To: Daniel Okafor <d.okafor@corvid-analytics.example>
Cc: Lab Operations <lab-ops@tidewater-labs.example>
Subject: Sample shipment for the stability study, batch 7
Date: Tue, 11 Mar 2025 09:41:09 +0000
Message-ID: <20250311094109.77c1e2@tidewater-labs.example>
MIME-Version: 1.0
Content-Type: text/plain; charset="utf-8"
Content-Transfer-Encoding: 8bit

Hi Daniel,

Batch 7 of the stability samples left our lab this morning by refrigerated courier.
There are 24 vials in two insulated boxes, each box with its own temperature logger.

Courier: Polar Freight, tracking number PF 5530 2187 44
Expected delivery: Wednesday 12 March, before noon

Please check the loggers when the boxes arrive and send us the readings; anything
above 8 °C for more than 30 minutes means we re-run that box. The chain-of-custody
form is in the lid of box 1 and needs a signature and the time of receipt.

Thanks,
Priya

--
Priya Raman, Senior Scientist
Tidewater Labs, Analytical Services
`

// calendarEventSample is an iCalendar (RFC 5545) file with one event.
const calendarEventSample = "BEGIN:VCALENDAR\r\n" +
	"VERSION:2.0\r\n" +
	"PRODID:-//Corvid Analytics//Team Calendar 2.4//EN\r\n" +
	"CALSCALE:GREGORIAN\r\n" +
	"METHOD:REQUEST\r\n" +
	"BEGIN:VEVENT\r\n" +
	"UID:7f3c9a10-55be-4d2e-9a61-0c4e8d2b1f77@corvid-analytics.example\r\n" +
	"DTSTAMP:20250402T151200Z\r\n" +
	"DTSTART:20250409T130000Z\r\n" +
	"DTEND:20250409T140000Z\r\n" +
	"SUMMARY:Q2 data pipeline review\r\n" +
	"LOCATION:Room 3.14 (Kestrel) and video link\r\n" +
	"DESCRIPTION:Agenda: 1) ingestion latency since the March change\\, 2) back\r\n" +
	" fill plan for the February gap\\, 3) owners for the alerting runbook. Ple\r\n" +
	" ase read the latency dashboard before the meeting.\r\n" +
	"ORGANIZER;CN=Hana Lindqvist:mailto:h.lindqvist@corvid-analytics.example\r\n" +
	"ATTENDEE;CN=Daniel Okafor;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION:mailto\r\n" +
	" :d.okafor@corvid-analytics.example\r\n" +
	"ATTENDEE;CN=Marco Bellini;ROLE=OPT-PARTICIPANT;PARTSTAT=ACCEPTED:mailto:m.\r\n" +
	" bellini@corvid-analytics.example\r\n" +
	"STATUS:CONFIRMED\r\n" +
	"SEQUENCE:0\r\n" +
	"BEGIN:VALARM\r\n" +
	"ACTION:DISPLAY\r\n" +
	"DESCRIPTION:Q2 data pipeline review in 15 minutes\r\n" +
	"TRIGGER:-PT15M\r\n" +
	"END:VALARM\r\n" +
	"END:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

// channelMessagesSample is a team chat channel's recent history.
const channelMessagesSample = `#platform-oncall · 14 messages today

[08:02] Sunita Kaur: morning all, handing over from the night shift. Two pages overnight, both the disk alert on ingest-3, both cleared by the log rotation job.
[08:05] Tomás Ferreira: thanks Sunita. Is the rotation job still running on the old schedule?
[08:06] Sunita Kaur: yes, every 6 hours. I opened OPS-2291 to move it to hourly.
[08:19] Grace Mensah: heads up, the certificate for the status page expires on Friday. Renewal is automated but it failed last time.
[08:21] Tomás Ferreira: I'll watch the renewal run tonight and post here when it's done.
[09:47] bot-deploys: api-gateway v4.18.2 deployed to production (canary 10% → 100%, 22 min, no alerts)
[09:52] Grace Mensah: 👍 nice, that's the fix for the retry storm
[10:30] Oleksandr Petrenko: anyone know why the staging database is read-only?
[10:33] Sunita Kaur: the weekly snapshot restore, it should be writable again by 11:00
[10:34] Oleksandr Petrenko: ah ok, I'll wait
[11:08] Oleksandr Petrenko: writable again, thanks
[11:15] Tomás Ferreira: reminder that the incident review for last Tuesday's outage is at 15:00, doc is pinned in this channel
[11:16] Grace Mensah: I added the timeline, please check the 02:10 to 02:40 part
[11:40] Sunita Kaur: signing off, Tomás has the pager until 20:00
`

// balanceSample is an account balance summary as an online bank shows it.
const balanceSample = `Harbourside Bank · Online banking
Accounts summary for Ms Leila Haddad, as of 14 June 2025, 07:30 BST

Account                          Number        Available      Balance
Current Account                  ****2716       1,842.37     1,902.37
  Pending: 60.00 (card payment, Tesco Stores 2231, 13 Jun)
  Arranged overdraft: 500.00, unused
Easy Saver                       ****5530       7,215.00     7,215.00
  Interest rate: 3.10% AER variable, paid monthly
Fixed Saver 12 months            ****9014              -    10,000.00
  Matures: 2 February 2026; rate 4.25% AER fixed
Credit Card (Visa)               ****0883       4,126.55      -873.45
  Credit limit: 5,000.00
  Statement balance: 612.80, minimum payment 25.00 due 27 June 2025

Total across accounts: 18,243.92 GBP
Next scheduled payment: 16 June 2025, 950.00 to Dunmore Lettings (rent), standing order
`

// transactionsSample is a transaction export in CSV, as banks let
// customers download it.
const transactionsSample = `Date,Description,Category,Amount,Currency,Balance
2025-06-02,SALARY ORBITAL SYSTEMS LTD,Income,3125.00,GBP,4987.12
2025-06-02,DUNMORE LETTINGS RENT,Housing,-950.00,GBP,4037.12
2025-06-03,TFL TRAVEL CHARGE,Transport,-8.40,GBP,4028.72
2025-06-04,PRET A MANGER 0412,Eating out,-6.85,GBP,4021.87
2025-06-05,OCTOPUS ENERGY DD,Utilities,-84.00,GBP,3937.87
2025-06-07,SAINSBURYS SACAT 0631,Groceries,-52.19,GBP,3885.68
2025-06-09,SPOTIFY P2C1A4F3E1,Subscriptions,-11.99,GBP,3873.69
2025-06-10,TRANSFER TO EASY SAVER,Transfers,-400.00,GBP,3473.69
2025-06-11,AMZNMKTPLACE*2K4RT9,Shopping,-23.49,GBP,3450.20
2025-06-12,REFUND ASOS.COM,Shopping,35.00,GBP,3485.20
2025-06-13,TESCO STORES 2231,Groceries,-60.00,GBP,3425.20
`

// flightSearchSample is a flight search tool's result list.
const flightSearchSample = `Flight search: Lisbon (LIS) → Copenhagen (CPH), Thu 18 Sep 2025, 1 adult, economy
Sorted by price · 6 results · prices include taxes and one cabin bag

1. TAP Air Portugal TP754        dep 06:40 LIS  arr 11:05 CPH   3h25  nonstop
   Fare: 148.00 EUR  (Classic; 23 kg checked bag included)  · 7 seats left
2. SAS SK2576                    dep 12:15 LIS  arr 16:45 CPH   3h30  nonstop
   Fare: 163.40 EUR  (Go Light; checked bag +35.00)
3. Lufthansa LH1167 / LH830      dep 07:05 LIS  arr 14:10 CPH   6h05  1 stop (FRA, 1h10)
   Fare: 171.90 EUR  (Economy Light; checked bag +40.00)
4. KLM KL1692 / KL1129           dep 10:50 LIS  arr 18:55 CPH   7h05  1 stop (AMS, 1h35)
   Fare: 189.00 EUR  (Economy Standard; 23 kg checked bag included)
5. easyJet U2 7631               dep 17:20 LIS  arr 21:55 CPH   3h35  nonstop
   Fare: 96.50 EUR   (Standard; large cabin bag and checked bag extra) · 3 seats left
6. Iberia IB3107 / IB3236        dep 09:30 LIS  arr 17:40 CPH   7h10  1 stop (MAD, 2h20)
   Fare: 204.10 EUR  (Basic; checked bag +30.00)

Price alert: fares on this route are about 12% below the usual for these dates.
`

// feedSample is a social network's home feed, newest first.
const feedSample = `Home feed · updated 2 minutes ago

@marinbio · Marin Coastal Science · 12m
Our kelp restoration divers counted 1,140 urchins in one 30 m transect this
morning. Five years ago that number was under 200. Full survey notes on the blog.
♥ 284  ↻ 61  💬 19

@tomaszcodes · Tomasz Wróbel · 40m
Released v2.0 of tinyqueue: priority updates in O(log n), no more rebuilds.
Thanks to the 14 people who sent patches this spring.
♥ 97  ↻ 22  💬 8

@cityofdunmore · Dunmore City Council · 1h
Bridge Street will close to traffic from 20:00 on Friday to 06:00 on Monday for
resurfacing. Buses 4 and 17 divert via Quay Road.
♥ 35  ↻ 48  💬 27

@nadia.reads · Nadia Osei · 3h
Finished "The Glass Orchard" on the train home. The last chapter made me miss my stop.
♥ 152  ↻ 4  💬 31
`
