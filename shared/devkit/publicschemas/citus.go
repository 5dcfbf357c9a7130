package publicschemas

import (
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// CitusAds is the Citus multi-tenant tutorial's ad-analytics schema:
// bigint tenants (company_id), UTC wall-clock timestamps, numeric(20,10),
// inet, jsonb and text[]. README's "Bring your own tables" uses it, with
// these catalog init lines.
func CitusAds() Schema {
	common := []string{"--tenant-column", "company_id", "--source-time-zone", "UTC"}
	return Schema{
		Name: "citus_ads", Title: "Citus multi-tenant tutorial, ad analytics (citusdata/citus_docs, CC BY 4.0)",
		PGSchema: "public", SourceZone: "UTC", AccountZone: "UTC",
		Tenants: []string{"1", "2", "3"},
		Inits: [][]string{
			append(common[:4:4], "--table", "clicks", "--partition-column", "clicked_at"),
			append(common[:4:4], "--table", "impressions", "--partition-column", "seen_at"),
			append(common[:4:4], "--table", "campaigns", "--table", "ads", "--partition", "snapshot"),
			{"--tenant-column", "id", "--source-time-zone", "UTC", "--table", "companies", "--partition", "snapshot"},
		},
		generate: genCitus,
	}
}

var (
	ips      = []string{"192.168.0.1", "10.1.2.3", "203.0.113.7", "2001:db8::1", "::1", "192.168.0.0/24", "2001:db8::/48"}
	sites    = []string{"https://example.com/", "https://news.example.org/a?b=c&d=e", "http://ünïcode.example/ü", "https://x.example/'quoted'"}
	userData = []JSON{
		`{"is_mobile": true, "location": "Lisboa", "visits": 3}`,
		`{"nested": {"a": [1, 2.5, null, "x"]}, "ü": "ö 🦆"}`,
		`{}`,
		`[1, "two", {"three": 3}]`,
		`"just a string"`,
		`{"big": 123456789012345678, "neg": -0.000001, "esc": "quote \" backslash \\ tab \t"}`,
	}
)

func genCitus(g *gen, days []civil.Date) {
	utc := time.UTC
	wall := func(t time.Time) Wall { return Wall(t.In(utc)) }
	first := days[0].Start(g.loc)
	var adsOf [][]int64
	for c := int64(1); c <= 3; c++ {
		g.add("companies", Row{"id": c, "name": pick(g, texts...) + " Inc", "image_url": g.maybe(3, "https://img.example/"+pick(g, "a.png", "b c.png")),
			"created_at": wall(first.Add(-30 * 24 * time.Hour)), "updated_at": wall(first.Add(-time.Duration(c) * time.Hour))})
		var ads []int64
		for i := int64(1); i <= 2; i++ {
			id := c*100 + i
			var urls any = TextArray{ptr("evil.example"), ptr("with, comma"), nil, ptr(`quote " \ and {braces}`), ptr("ünïcødé")}
			switch i {
			case 2:
				urls = g.maybe(2, TextArray{})
			}
			g.add("campaigns", Row{"id": id, "company_id": c, "name": pick(g, texts...), "cost_model": pick(g, "cost_per_click", "cost_per_impression"),
				"state": pick(g, "running", "paused", "archived"), "monthly_budget": g.maybe(3, g.r.Int64N(1_000_000_000_000)),
				"blacklisted_site_urls": urls, "created_at": wall(first.Add(-20 * 24 * time.Hour)), "updated_at": wall(first.Add(-time.Duration(i) * time.Minute))})
			for j := int64(1); j <= 2; j++ {
				ad := id*10 + j
				ads = append(ads, ad)
				g.add("ads", Row{"id": ad, "company_id": c, "campaign_id": id, "name": pick(g, texts...), "image_url": g.maybe(3, "https://img.example/ad.png"),
					"target_url": g.maybe(4, pick(g, sites...)), "impressions_count": g.r.Int64N(1 << 40), "clicks_count": g.maybe(5, g.r.Int64N(1<<20)),
					"created_at": wall(first.Add(-10 * 24 * time.Hour)), "updated_at": wall(first.Add(-time.Duration(j) * time.Second))})
			}
		}
		adsOf = append(adsOf, ads)
	}
	id := int64(0)
	for _, day := range days {
		for c := int64(1); c <= 3; c++ {
			for _, table := range []string{"clicks", "impressions"} {
				at, cost := "clicked_at", "cost_per_click_usd"
				if table == "impressions" {
					at, cost = "seen_at", "cost_per_impression_usd"
				}
				for _, t := range g.instants(day, 12) {
					id++
					g.add(table, Row{"id": id, "company_id": c, "ad_id": g.maybe(6, pick(g, adsOf[c-1]...)), at: wall(t), "site_url": pick(g, sites...),
						cost: g.maybe(5, g.decimal(10, 10)), "user_ip": pick(g, ips...), "user_data": pick(g, userData...)})
				}
			}
		}
	}
}
