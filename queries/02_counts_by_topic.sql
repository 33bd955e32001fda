-- Messages per topic with their first and last log time (a header-only scan:
-- counts come from the message indexes, nothing is decompressed).
SELECT topic, count(*) AS messages, min(log_time) AS first, max(log_time) AS last
FROM 'tests/data/demo.mcap'
GROUP BY topic
ORDER BY topic;
