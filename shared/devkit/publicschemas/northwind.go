package publicschemas

import (
	"fmt"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Northwind is Microsoft's sample database: five-letter varchar customer
// codes as the tenants, orders by a nullable date, smallint ids, real
// freight.
func Northwind() Schema {
	return Schema{
		Name: "northwind", Title: "Northwind, Microsoft's sample trading company (pthom/northwind_psql, Ms-PL)",
		PGSchema: "northwind", AccountZone: "Europe/Berlin",
		Tenants: []string{"ALFKI", "ANATR", "ANTON"},
		Inits: [][]string{
			{"--tenant-column", "customer_id", "--table", "northwind.orders", "--partition-column", "order_date", "--partition", "stat_date"},
			{"--tenant-column", "customer_id", "--table", "northwind.customers", "--partition", "snapshot"},
		},
		generate: genNorthwind,
	}
}

// freights are reals whose float32 value is not the decimal they are
// written as: the delivered double is the real's exact value.
var freights = []float32{32.38, 11.61, 65.83, 0, 1458.8799, 0.02, 3.4028235e38}

func genNorthwind(g *gen, days []civil.Date) {
	customers := []Row{
		{"company_name": "Alfreds Futterkiste", "contact_name": "Maria Anders", "contact_title": "Sales Representative", "address": "Obere Str. 57",
			"city": "Berlin", "region": nil, "postal_code": "12209", "country": "Germany", "phone": "030-0074321", "fax": "030-0076545"},
		{"company_name": "Ana Trujillo Emparedados y helados", "contact_name": "Ana Trujillo", "contact_title": "Owner", "address": "Avda. de la Constitución 2222",
			"city": "México D.F.", "region": nil, "postal_code": "05021", "country": "Mexico", "phone": "(5) 555-4729", "fax": "(5) 555-3745"},
		{"company_name": "Antonio Moreno Taquería", "contact_name": "Antonio Moreno", "contact_title": "Owner", "address": "Mataderos  2312",
			"city": "México D.F.", "region": nil, "postal_code": "05023", "country": "Mexico", "phone": "(5) 555-3932", "fax": nil},
	}
	for i, r := range customers {
		r["customer_id"] = g.s.Tenants[i]
		g.add("customers", r)
	}
	order := int64(10247)
	for _, day := range days {
		for i, c := range g.s.Tenants {
			for k := range 6 {
				order++
				var date any = day
				if k == 2 && day == days[1] {
					date = nil // an order without a date is in no day
				}
				g.add("orders", Row{"order_id": order, "customer_id": c, "employee_id": g.r.Int64N(9) + 1, "order_date": date,
					"required_date": day.AddDays(14), "shipped_date": g.maybe(3, day.AddDays(3)), "ship_via": g.r.Int64N(3) + 1,
					"freight": pick(g, freights...), "ship_name": customers[i]["company_name"], "ship_address": customers[i]["address"],
					"ship_city": customers[i]["city"], "ship_region": g.maybe(2, "RJ"), "ship_postal_code": customers[i]["postal_code"],
					"ship_country": fmt.Sprint(customers[i]["country"])})
			}
		}
	}
}
