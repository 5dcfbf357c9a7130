package publicschemas

import (
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Pagila is the PostgreSQL community's sample database: a payment table
// partitioned by range of its timestamptz, views, triggers, integer
// customer ids as the tenants.
func Pagila() Schema {
	return Schema{
		Name: "pagila", Title: "pagila, the PostgreSQL sample DVD rental (devrimgunduz/pagila, MIT terms)",
		PGSchema: "pagila", AccountZone: "America/Sao_Paulo",
		// Not 1: one deployment serves every schema of the test, and
		// company 1 of the Citus schema is another account's tenant key.
		Tenants: []string{"2", "1", "3"},
		Inits: [][]string{
			{"--tenant-column", "customer_id", "--table", "pagila.payment", "--partition-column", "payment_date"},
			{"--tenant-column", "customer_id", "--table", "pagila.rental", "--partition-column", "rental_date"},
			{"--tenant-column", "customer_id", "--table", "pagila.customer", "--partition", "snapshot"},
		},
		Refused: []Refusal{{
			Init: []string{"--tenant-column", "id", "--table", "pagila.customer_list", "--partition", "snapshot"},
			Why:  `column "zip code": a catalog column is named in lower snake case`,
		}},
		generate: genPagila,
	}
}

func genPagila(g *gen, days []civil.Date) {
	// A partition for the days, with the customer index pagila gives each
	// of its monthly partitions.
	from, to := days[0].AddDays(-2), days[len(days)-1].AddDays(3)
	g.data.Setup = append(g.data.Setup,
		fmt.Sprintf(`CREATE TABLE payment_p_daybook PARTITION OF payment FOR VALUES FROM ('%s 00:00:00+00') TO ('%s 00:00:00+00')`, from, to),
		`CREATE INDEX idx_fk_payment_p_daybook_customer_id ON payment_p_daybook USING btree (customer_id)`)
	g.add("country", Row{"country_id": int64(1), "country": "Portugal", "last_update": time.Date(2020, 2, 15, 9, 45, 25, 0, time.UTC)})
	g.add("country", Row{"country_id": int64(2), "country": "Japan", "last_update": time.Date(2020, 2, 15, 9, 45, 25, 0, time.UTC)})
	g.add("city", Row{"city_id": int64(1), "city": "Lisboa", "country_id": int64(1), "last_update": time.Date(2020, 2, 15, 9, 45, 25, 0, time.UTC)})
	g.add("city", Row{"city_id": int64(2), "city": "Ōsaka", "country_id": int64(2), "last_update": time.Date(2020, 2, 15, 9, 45, 25, 0, time.UTC)})
	first := days[0].Start(g.loc)
	for c := int64(1); c <= 3; c++ {
		g.add("address", Row{"address_id": c, "address": pick(g, texts...), "address2": g.maybe(2, ""), "district": "Centro", "city_id": 1 + c%2,
			"postal_code": g.maybe(3, "1100-148"), "phone": "+351 21 000 000", "last_update": first.Add(-48 * time.Hour)})
		g.add("customer", Row{"customer_id": c, "store_id": 1 + c%2, "first_name": pick(g, texts...), "last_name": pick(g, "Ñúñez", "O'Brien", "Smith"),
			"email": g.maybe(3, fmt.Sprintf("c%d@example.com", c)), "address_id": c, "activebool": c != 2, "create_date": days[0].AddDays(-100),
			"last_update": g.maybe(3, first.Add(-time.Duration(c)*time.Hour-123456*time.Microsecond)), "active": g.maybe(2, int64(1))})
	}
	rental := int64(0)
	for _, day := range days {
		for c := int64(1); c <= 3; c++ {
			for _, t := range g.instants(day, 6) {
				rental++
				g.add("rental", Row{"rental_id": rental, "rental_date": t, "inventory_id": g.r.Int64N(4581) + 1, "customer_id": c,
					"return_date": g.maybe(3, t.Add(72*time.Hour+time.Duration(g.r.IntN(3600))*time.Second)), "staff_id": 1 + g.r.Int64N(2),
					"last_update": t.Add(time.Hour)})
				g.add("payment", Row{"payment_id": rental, "customer_id": c, "staff_id": 1 + g.r.Int64N(2), "rental_id": rental,
					"amount": g.decimal(3, 2), "payment_date": t.Add(time.Duration(g.r.IntN(600)) * time.Second)})
			}
		}
	}
}
