-- Message rate per topic and second, with an external table over the file.
CREATE EXTERNAL TABLE demo STORED AS MCAP LOCATION 'tests/data/demo.mcap';

SELECT date_bin(INTERVAL '1 second', log_time) AS second, topic, count(*) AS messages
FROM demo
WHERE log_time < to_timestamp(1700000002)
GROUP BY 1, 2
ORDER BY 1, 2;
