-- Payloads are untouched bytes: hash them, measure them, or read JSON ones as text.
SELECT log_time, sequence, length(data) AS bytes, md5(data) AS md5
FROM 'tests/data/demo.mcap'
WHERE topic = '/tf'
ORDER BY log_time
LIMIT 3;

SELECT arrow_cast(data, 'Utf8') AS diagnostics
FROM 'tests/data/demo.mcap'
WHERE topic = '/diagnostics'
ORDER BY log_time
LIMIT 2;
