-- Northwind: Microsoft's sample database of a food trading company, as
-- ported to PostgreSQL: customers keyed by a five-letter code, their
-- orders with dates (no times), smallint ids and real freight.
--
-- Origin: https://github.com/pthom/northwind_psql, northwind.sql at commit
-- cd0ef28d66369fbe177778e604e4be0f153c9e5c. Licence: Microsoft Public
-- License (Ms-PL) (LICENSE of that repository; the database originates
-- from Microsoft).
--
-- Trimmed to customers and orders, as published (pg_dump's statements,
-- without its SET lines and INSERTs); the orders' foreign keys to the
-- employees and shippers tables, not kept, are left out.

CREATE TABLE customers (
    customer_id character varying(5) NOT NULL,
    company_name character varying(40) NOT NULL,
    contact_name character varying(30),
    contact_title character varying(30),
    address character varying(60),
    city character varying(15),
    region character varying(15),
    postal_code character varying(10),
    country character varying(15),
    phone character varying(24),
    fax character varying(24)
);

CREATE TABLE orders (
    order_id smallint NOT NULL,
    customer_id character varying(5),
    employee_id smallint,
    order_date date,
    required_date date,
    shipped_date date,
    ship_via smallint,
    freight real,
    ship_name character varying(40),
    ship_address character varying(60),
    ship_city character varying(15),
    ship_region character varying(15),
    ship_postal_code character varying(10),
    ship_country character varying(15)
);

ALTER TABLE ONLY customers
    ADD CONSTRAINT pk_customers PRIMARY KEY (customer_id);

ALTER TABLE ONLY orders
    ADD CONSTRAINT pk_orders PRIMARY KEY (order_id);

ALTER TABLE ONLY orders
    ADD CONSTRAINT fk_orders_customers FOREIGN KEY (customer_id) REFERENCES customers;
